import type { TestingModule } from '@nestjs/testing';
import { BULK_BATCH_SIZE, QueueAdmin } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

/** A database and an app with no handlers (nothing claims the retried jobs), for one describe block. */
function useAppWithoutHandlers(): { app: () => TestingModule } {
  let db: TestDatabase | undefined;
  let app: TestingModule | undefined;
  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  return { app: () => app! };
}

/** A bulk retry of 100,000 jobs runs as many short statements, and leaves every job available. */
describe('retryJobs over 100,000 jobs', () => {
  const JOBS = 100_000;
  const { app } = useAppWithoutHandlers();

  it('retries them all, in batches', async () => {
    const dataSource = app().get(DataSource);
    await dataSource.query(
      `INSERT INTO awa.jobs (kind, queue, state, attempt, max_attempts, finalized_at, errors, args)
       SELECT 'bulk.k' || (i % 3), 'default', 'failed', 3, 3, now(),
              '[{"at":"2026-01-01","attempt":3,"error":"boom"}]', jsonb_build_object('i', i)
         FROM generate_series(1, ${JOBS}) i`,
    );
    await dataSource.query(`INSERT INTO awa.jobs (kind, state, finalized_at) VALUES ('bulk.k0', 'completed', now())`);

    const result = await app()
      .get(QueueAdmin)
      .retryJobs({ states: ['failed'], kinds: ['bulk.k0', 'bulk.k1', 'bulk.k2'] });

    expect(result.count).toBe(JOBS);
    expect(result.batches).toBeGreaterThan(1);
    expect(result.batches).toBeGreaterThanOrEqual(JOBS / BULK_BATCH_SIZE);
    const rows: Array<{ state: string; attempt: number; errors: number; n: string }> = await dataSource.query(
      `SELECT state, attempt, jsonb_array_length(errors) AS errors, count(*) AS n
         FROM awa.all_jobs GROUP BY state, attempt, errors ORDER BY state`,
    );
    expect(rows.map((r) => ({ ...r, n: Number(r.n) }))).toEqual([
      { state: 'available', attempt: 0, errors: 1, n: JOBS },
      { state: 'completed', attempt: 0, errors: 0, n: 1 },
    ]);
  });
});

/**
 * A bulk retry of thousands of unique jobs, a third of whose keys another job holds and some keys
 * twice among them: set-based, one statement per batch, and no unique violation reaches PostgreSQL
 * or the caller.
 */
describe('retryJobs over unique jobs', () => {
  const KEYS = 3_000;
  const { app } = useAppWithoutHandlers();

  it('retries the unique jobs whose key is free, once per key, in one statement per batch and without an error', async () => {
    const dataSource = app().get(DataSource);
    const states = '{scheduled,available,running,retryable}';
    // One failed job per key; keys divisible by 3 are held by a scheduled job; keys divisible by 5
    // have a second, newer failed job (only the newest of the two may be retried).
    await dataSource.query(
      `INSERT INTO awa.jobs (kind, state, attempt, finalized_at, unique_key, unique_states, args)
       SELECT 'uniq', 'failed', 1, now(), 'key-' || i, $1, jsonb_build_object('i', i, 'copy', 1)
         FROM generate_series(1, ${KEYS}) i`,
      [states],
    );
    await dataSource.query(
      `INSERT INTO awa.jobs (kind, state, run_at, unique_key, unique_states, args)
       SELECT 'uniq', 'scheduled', now() + interval '1 hour', 'key-' || i, $1, jsonb_build_object('i', i, 'holder', true)
         FROM generate_series(3, ${KEYS}, 3) i`,
      [states],
    );
    await dataSource.query(
      `INSERT INTO awa.jobs (kind, state, attempt, finalized_at, unique_key, unique_states, args)
       SELECT 'uniq', 'failed', 1, now(), 'key-' || i, $1, jsonb_build_object('i', i, 'copy', 2)
         FROM generate_series(5, ${KEYS}, 5) i`,
      [states],
    );
    // Every statement run (QueueAdmin's, the app's own sweeps) and every error, seen at AwaDatabase.query.
    const database = app().get(AwaDatabase);
    const query = database.query.bind(database) as (sql: { name: string }, values?: unknown[]) => Promise<unknown[]>;
    const calls: string[] = [];
    const failures: string[] = [];
    Object.assign(database, {
      query: async (sql: { name: string }, values?: unknown[]) => {
        calls.push(sql.name);
        return query(sql, values).catch((error: unknown) => {
          failures.push(String(error));
          throw error;
        });
      },
    });

    const result = await app()
      .get(QueueAdmin)
      .retryJobs({ states: ['failed'], kinds: ['uniq'] });

    const held = Math.floor(KEYS / 3);
    expect(failures).toEqual([]);
    expect(result.count).toBe(KEYS - held);
    expect(calls.filter((name) => name.includes('admin'))).toEqual(
      Array.from({ length: result.batches }, () => expect.stringContaining('admin_retry_batch')),
    );
    expect(result.batches).toBe(Math.ceil((KEYS + KEYS / 5) / BULK_BATCH_SIZE));
    const rows: Array<{ state: string; holder: boolean; copy: number | null; n: number }> = await dataSource.query(
      `SELECT state, (args ? 'holder') AS holder, (args->>'copy')::int AS copy,
              count(*)::int AS n, count(*) FILTER (WHERE (args->>'i')::int % 3 = 0)::int AS of_held_keys
         FROM awa.all_jobs GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
    );
    const twice = Math.floor(KEYS / 5);
    const twiceHeld = Math.floor(KEYS / 15);
    expect(rows).toEqual([
      // Every free key has exactly one retried job: the newest (copy 2) where it has two.
      { state: 'available', holder: false, copy: 1, n: KEYS - held - (twice - twiceHeld), of_held_keys: 0 },
      { state: 'available', holder: false, copy: 2, n: twice - twiceHeld, of_held_keys: 0 },
      { state: 'failed', holder: false, copy: 1, n: held + twice - twiceHeld, of_held_keys: held },
      { state: 'failed', holder: false, copy: 2, n: twiceHeld, of_held_keys: twiceHeld },
      { state: 'scheduled', holder: true, copy: null, n: held, of_held_keys: held },
    ]);
  });
});
