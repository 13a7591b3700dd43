import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server every test file shares (set by test/setup/global-setup.mjs). */
export function adminUrl(): string {
  const url = process.env.AWA_TEST_ADMIN_URL;
  if (!url) throw new Error('AWA_TEST_ADMIN_URL is not set: run the tests through jest (npm test)');
  return url;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A database of one test file on the shared server. */
export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  /** Drops it, ending any session still connected to it. */
  drop(): Promise<void>;
}

/** A fresh, empty database of its own for one test file; drop() removes it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `awa_test_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  return {
    name,
    url: withDatabase(adminUrl(), name),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl() });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * Ends a pg Pool and waits until every connection of it has really closed. pool.end() resolves as
 * soon as it has asked its clients to end; a DROP DATABASE ... WITH (FORCE) right after would kill
 * those backends mid-goodbye, and the pool would raise that as an unhandled 'error' in whatever
 * test the Jest worker runs next.
 */
export async function endPool(pool: pg.Pool): Promise<void> {
  let open = pool.totalCount;
  const closed = new Promise<void>((resolve) => {
    if (open === 0) resolve();
    pool.on('remove', () => {
      if (--open <= 0) resolve();
    });
  });
  await pool.end();
  await closed;
}

/** Runs `body` on a connection of its own, ended after it (its statistics then reach the collector). */
export async function withConnection<T>(url: string, body: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

/** Runs one statement on its own short-lived connection (for checks from outside the apps under test). */
export async function queryOnce<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  return withConnection(url, async (client) => (await client.query(sql, params)).rows as T[]);
}
