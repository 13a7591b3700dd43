import type { Provider, Type } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { MaintenanceService, type AwaModuleOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import type { MaintenanceTask } from '../../lib/maintenance/tasks/maintenance-task.js';
import type { Exec } from '../support/job-factory.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

/** Intervals under which nothing runs by itself: the test calls the task. */
export const QUIET_OPTIONS = {
  heartbeatInterval: 1_000,
  heartbeatStaleAfter: 30_000,
  maintenanceInterval: 3_600_000,
  orphanSweepInterval: 3_600_000,
} satisfies AwaModuleOptions;

type Step = () => unknown;

/** A database for the enclosing describe block (see useTestDatabase). */
export interface BlockDatabase {
  /** Its URL, once the block's beforeAll ran. */
  readonly url: string;
  /** Adds a step to run after all the block's tests, before the database is dropped (last added first). */
  onClose(step: Step): void;
}

/** The app of the enclosing describe block (see useQuietApp). */
export interface QuietApp {
  /** The app's database URL, once the block's beforeAll ran. */
  readonly url: string;
  /** The app, once the block's beforeAll ran. */
  readonly app: TestingModule;
  /** Plain SQL through the app's DataSource; a stable function, callable once the block's beforeAll ran. */
  readonly exec: Exec;
  /** The app's task of class (or token) `type`; run() calls the app's instance (synchronously, up to that instance's first await). */
  task(type: Type<MaintenanceTask> | symbol): Pick<MaintenanceTask, 'run'>;
  /** Adds a step to run after all the block's tests, before the app closes (last added first). */
  onClose(step: Step): void;
}

export interface QuietAppOptions {
  /** Run on this database (shared with other blocks) instead of one of the block's own. */
  database?: BlockDatabase;
  /** Providers of the app (e.g. handlers). */
  providers?: Provider[];
  /** More to clear before each test, after jobs and leases are truncated. */
  reset?: (exec: Exec) => Promise<unknown>;
  /** false: no TRUNCATE before each test, `reset` empties what the test needs (see jobs-statistics.ts). */
  truncate?: boolean;
}

async function runSteps(steps: Step[]): Promise<void> {
  for (const step of steps.splice(0).reverse()) await step();
}

/** A fresh database for the enclosing describe block: created before all its tests, dropped after them. */
export function useTestDatabase(): BlockDatabase {
  let db: TestDatabase | undefined;
  const steps: Step[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await runSteps(steps);
    await db?.drop();
  });
  return {
    get url() {
      if (!db) throw new Error('the test database is created in beforeAll');
      return db.url;
    },
    onClose: (step) => void steps.push(step),
  };
}

/**
 * An app for the enclosing describe block with QUIET_OPTIONS and `awa` on top, on a database of
 * its own (or `options.database`). Its MaintenanceService is stopped once started, which waits out
 * the boot sweep, so only the task under test moves seeded rows. Jobs and leases are truncated
 * before each test; after all, the app closes and its own database is dropped.
 */
export function useQuietApp(awa: AwaModuleOptions = {}, options: QuietAppOptions = {}): QuietApp {
  let own: TestDatabase | undefined;
  let app: TestingModule | undefined;
  let dataSource: DataSource | undefined;
  const steps: Step[] = [];
  const ctx: QuietApp = {
    get url() {
      if (options.database) return options.database.url;
      if (!own) throw new Error('the test database is created in beforeAll');
      return own.url;
    },
    get app() {
      if (!app) throw new Error('the quiet app starts in beforeAll');
      return app;
    },
    exec: async (text, values) => {
      if (!dataSource) throw new Error('the quiet app starts in beforeAll');
      return dataSource.query(text, values);
    },
    task: (type) => ({ run: () => ctx.app.get<MaintenanceTask>(type, { strict: false }).run() }),
    onClose: (step) => void steps.push(step),
  };
  beforeAll(async () => {
    if (!options.database) own = await createTestDatabase();
    app = await startTestApp({ url: ctx.url, awa: { ...QUIET_OPTIONS, ...awa }, providers: options.providers });
    await app.get(MaintenanceService).stop();
    dataSource = app.get(DataSource);
  });
  afterAll(async () => {
    await runSteps(steps);
    await app?.close();
    await own?.drop();
  });
  beforeEach(async () => {
    if (options.truncate !== false) await ctx.exec('TRUNCATE awa.jobs, awa.job_history, awa.active_leases');
    await options.reset?.(ctx.exec);
  });
  return ctx;
}
