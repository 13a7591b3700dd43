import { jest } from '@jest/globals';
import { Injectable, Logger } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueAdmin, type Job } from 'nestjs-awa';
import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const ran = new Set<string>();

@Injectable()
class RaceHandlers {
  @JobHandler('race.k') async run(job: Job) {
    ran.add(job.id);
    await sleep(5, undefined, { signal: job.signal }).catch(() => undefined);
  }
}

/**
 * deleteJobs racing live workers: a job a worker has claimed is never deleted under it (it gets a
 * cancel request instead). Every job ends deleted, completed or cancelled, and no lease is left.
 */
describe('deleteJobs while workers claim the same jobs', () => {
  const JOBS = 3_000;
  let db: TestDatabase;
  let app: TestingModule;
  const warnings: string[] = [];
  let spy: jest.SpiedFunction<Logger['warn']>;

  beforeAll(async () => {
    spy = jest.spyOn(Logger.prototype, 'warn').mockImplementation((message: unknown) => {
      warnings.push(String(message));
    });
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [RaceHandlers],
      // A completion that loses a deadlock to a bulk batch (see runBatch) hears of it only after the
      // server's deadlock_timeout (1 s): FAST_OPTIONS' heartbeatStaleAfter of 1 s would leave its write
      // no time to be tried again, and the attempt would be rescued as retryable. The default leaves it.
      awa: { heartbeatStaleAfter: 10_000, queues: { default: { concurrency: 20, pollInterval: 200 } } },
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    spy.mockRestore();
  });

  it('deletes only jobs that are not running, and the workers lose no lease', async () => {
    const dataSource = app.get(DataSource);
    await dataSource.query(`INSERT INTO awa.jobs (kind) SELECT 'race.k' FROM generate_series(1, ${JOBS})`);
    await waitFor(() => ran.size > 0, 15_000, 'the workers to start');
    const result = await app.get(QueueAdmin).deleteJobs({ kinds: ['race.k'] });
    await waitFor(async () => {
      const [row] = await dataSource.query(
        `SELECT count(*)::int AS n FROM awa.all_jobs WHERE state IN ('available', 'running')`,
      );
      return row.n === 0;
    });
    const states: Array<{ state: string; n: number }> = await dataSource.query(
      'SELECT state, count(*)::int AS n FROM awa.all_jobs GROUP BY state',
    );
    const count = (state: string) => states.find((s) => s.state === state)?.n ?? 0;
    const completed = count('completed');
    // The running ones got a cancel request instead, and their attempts ended cancelled.
    expect(count('cancelled')).toBe(result.cancelled);
    expect(states.filter((s) => s.state !== 'completed' && s.state !== 'cancelled')).toEqual([]);
    expect(result.deleted + completed + result.cancelled).toBe(JOBS);
    expect(result.deleted).toBeGreaterThan(0);
    expect(await dataSource.query('SELECT job_id FROM awa.active_leases')).toEqual([]);
    // A job deleted under its running handler would have lost its lease when the result was written.
    expect(warnings.filter((w) => w.includes('no longer held'))).toEqual([]);
    expect(ran.size).toBeGreaterThan(0);
  });
});
