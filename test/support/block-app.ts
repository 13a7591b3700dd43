import type { TestingModule } from '@nestjs/testing';
import { createTestDatabase, type TestDatabase } from './test-database.js';
import { startTestApp, type TestAppOptions } from './test-app.js';

/** The app of a describe block and its database; read them in hooks and tests, once the block has started. */
export interface BlockApp {
  readonly app: TestingModule;
  readonly db: TestDatabase;
}

/**
 * Starts an app (startTestApp) on a database of its own before the enclosing block's tests, and
 * closes it and drops the database after them. Hooks the block registers later run after the start.
 */
export function useTestApp(options: Omit<TestAppOptions, 'url'>): BlockApp {
  let db: TestDatabase | undefined;
  let app: TestingModule | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ ...options, url: db.url });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  return {
    get app() {
      if (!app) throw new Error('useTestApp: the app has not started (read it in a hook or a test)');
      return app;
    },
    get db() {
      if (!db) throw new Error('useTestApp: the database is not created yet (read it in a hook or a test)');
      return db;
    },
  };
}
