import type { TestingModule } from '@nestjs/testing';
import { createTestDatabase, type TestDatabase } from './test-database.js';
import { startTestApp, type TestAppOptions } from './test-app.js';

/** The app of a describe block and its database; read them in hooks and tests, once the block has started. */
export interface BlockApp {
  readonly app: TestingModule;
  readonly db: TestDatabase;
}

/**
 * Starts an app (`start`, given the database URL) on a database of its own before the enclosing
 * block's tests, and closes it and drops the database after them. Hooks the block registers later
 * run after the start.
 */
export function useBlockApp(start: (url: string) => Promise<TestingModule>): BlockApp {
  let db: TestDatabase | undefined;
  let app: TestingModule | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    app = await start(db.url);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  return {
    get app() {
      if (!app) throw new Error('useBlockApp: the app has not started (read it in a hook or a test)');
      return app;
    },
    get db() {
      if (!db) throw new Error('useBlockApp: the database is not created yet (read it in a hook or a test)');
      return db;
    },
  };
}

/** useBlockApp with startTestApp. */
export const useTestApp = (options: Omit<TestAppOptions, 'url'>): BlockApp =>
  useBlockApp((url) => startTestApp({ ...options, url }));

/** The database of a describe block, and the apps its tests start on it. */
export interface BlockApps {
  readonly db: TestDatabase;
  /** Starts an app (startTestApp) on the block's database; it is closed after the test, if the test did not. */
  start(options?: Omit<TestAppOptions, 'url'>): Promise<TestingModule>;
}

/**
 * A database for the enclosing block, created before its tests and dropped after them, on which
 * each test starts the apps it needs (a boot per test, for the tests of boot and restart).
 */
export function useAppPerTest(): BlockApps {
  let db: TestDatabase | undefined;
  const open = new Set<TestingModule>();
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    for (const app of open) await app.close();
  });
  afterAll(async () => {
    await db?.drop();
  });
  const apps: BlockApps = {
    get db() {
      if (!db) throw new Error('useAppPerTest: the database is not created yet (read it in a hook or a test)');
      return db;
    },
    async start(options = {}) {
      const app = await startTestApp({ ...options, url: apps.db.url });
      open.add(app);
      // A test may close its app itself (a restart): it is then not closed again.
      const close = app.close.bind(app);
      app.close = async () => {
        open.delete(app);
        await close();
      };
      return app;
    },
  };
  return apps;
}
