import type { TestingModule } from '@nestjs/testing';
import { BULK_BATCH_SIZE, QueueAdmin } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

/** A bulk retry of 100,000 jobs runs as many short statements, and leaves every job available. */
describe('retryJobs over 100,000 jobs', () => {
  const JOBS = 100_000;
  let db: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url }); // no handlers: nothing claims the retried jobs
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('retries them all, in batches', async () => {
    const dataSource = app.get(DataSource);
    await dataSource.query(
      `INSERT INTO awa.jobs (kind, queue, state, attempt, max_attempts, finalized_at, errors, args)
       SELECT 'bulk.k' || (i % 3), 'default', 'failed', 3, 3, now(),
              '[{"at":"2026-01-01","attempt":3,"error":"boom"}]', jsonb_build_object('i', i)
         FROM generate_series(1, ${JOBS}) i`,
    );
    await dataSource.query(`INSERT INTO awa.jobs (kind, state, finalized_at) VALUES ('bulk.k0', 'completed', now())`);

    const result = await app
      .get(QueueAdmin)
      .retryJobs({ states: ['failed'], kinds: ['bulk.k0', 'bulk.k1', 'bulk.k2'] });

    expect(result.count).toBe(JOBS);
    expect(result.batches).toBeGreaterThan(1);
    expect(result.batches).toBeGreaterThanOrEqual(JOBS / BULK_BATCH_SIZE);
    const rows: Array<{ state: string; attempt: number; errors: number; n: string }> = await dataSource.query(
      `SELECT state, attempt, jsonb_array_length(errors) AS errors, count(*) AS n
         FROM awa.jobs GROUP BY state, attempt, errors ORDER BY state`,
    );
    expect(rows.map((r) => ({ ...r, n: Number(r.n) }))).toEqual([
      { state: 'available', attempt: 0, errors: 1, n: JOBS },
      { state: 'completed', attempt: 0, errors: 0, n: 1 },
    ]);
  });
});
