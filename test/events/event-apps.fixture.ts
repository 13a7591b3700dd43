import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, type AwaModuleOptions } from 'nestjs-awa';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

/** The job whose completions the event specs' groups receive. */
@Injectable()
export class OrderHandler {
  @JobHandler('order.place') place() {}
}

type Providers = Array<new (...args: never[]) => unknown>;

/** Apps of one event spec on its own database; every one still open is closed after each test. */
export interface EventApps {
  /** The spec's database. */
  readonly url: string;
  boot(providers?: Providers): Promise<TestingModule>;
  close(app: TestingModule): Promise<void>;
}

/**
 * Registers the spec's hooks (a database for the file; after each test its apps closed and its jobs,
 * events, subscriptions and positions cleared) and returns its apps, booted with `awa` options and,
 * by default, `providers`.
 */
export function useEventApps(awa: AwaModuleOptions, providers: Providers): EventApps {
  let db: TestDatabase | undefined;
  const apps = new Set<TestingModule>();
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  afterEach(async () => {
    for (const app of apps) await app.close();
    apps.clear();
    await queryOnce(
      db!.url,
      'TRUNCATE awa.jobs, awa.job_history, awa.job_events, awa.event_subscriptions, awa.event_group_positions',
    );
  });
  return {
    get url() {
      return db!.url;
    },
    async boot(these = providers) {
      const app = await startTestApp({ url: db!.url, awa, providers: these });
      apps.add(app);
      return app;
    },
    async close(app) {
      apps.delete(app);
      await app.close();
    },
  };
}
