import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  EnqueueValidationError,
  JobHandler,
  JobValueError,
  QueueProducer,
  RateLimitedError,
  type Job,
} from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { FlowMessages, RescueErrors } from '../../lib/awa.messages.js';
import { caught, caughtSync } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { maxInWindow, maxOverlap } from './flow-fixture.js';

/** Attempts seen by the handlers, in start order. */
@Injectable()
class FlowHandlers {
  readonly seen: Array<{ id: string; attempt: number }> = [];
  /** Handler starts of flow.prefetched, on this process's clock (ms). */
  readonly prefetchedStarts: number[] = [];

  constructor(private readonly dataSource: DataSource) {}

  /** Records its start and end (database clock) in flow_runs. */
  @JobHandler('flow.keyed', { queue: 'keyed' })
  async keyed(job: Job<{ ms: number }>) {
    await this.dataSource.query(`INSERT INTO flow_runs (job_id, started) VALUES ($1, clock_timestamp())`, [job.id]);
    await new Promise((r) => setTimeout(r, job.args.ms));
    await this.dataSource.query(`UPDATE flow_runs SET ended = clock_timestamp() WHERE job_id = $1`, [job.id]);
  }

  /** Records its end, in order (a sequence), with its key. */
  @JobHandler('flow.fair', { queue: 'fair' })
  async fair(job: Job<{ key: string }>) {
    await this.dataSource.query(`INSERT INTO flow_done (key) VALUES ($1)`, [job.args.key]);
  }

  @JobHandler('flow.rated', { queue: 'rated' })
  rated() {
    return undefined;
  }

  /**
   * Outlives the entry wait (300 ms / 40, at least 10 ms, lengthened to twice a claim's round trip
   * where that is longer): with 2 slots, some of each claim's buffered jobs go back.
   */
  @JobHandler('flow.prefetched', { queue: 'prefetched' })
  async prefetched() {
    this.prefetchedStarts.push(performance.timeOrigin + performance.now());
    await new Promise((r) => setTimeout(r, 500));
  }

  /** Backs off on its first attempt: by returning job.rateLimit(), or by throwing RateLimitedError. */
  @JobHandler('flow.backoff', { queue: 'rated' })
  backoff(job: Job<{ how: 'marker' | 'throw' }>) {
    this.seen.push({ id: job.id, attempt: job.attempt });
    if (this.seen.filter((s) => s.id === job.id).length > 1) return undefined;
    if (job.args.how === 'throw') throw new RateLimitedError(300);
    return job.rateLimit(300);
  }
}

describe('flow control in a worker', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  let handlers: FlowHandlers;
  const sql = (text: string, values?: unknown[]) => app.get(DataSource).query(text, values);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [FlowHandlers],
      awa: {
        queues: {
          ...FAST_OPTIONS.queues,
          keyed: { concurrency: 20, keyConcurrency: 2, pollInterval: 200 },
          fair: { concurrency: 20, keyConcurrency: 5, pollInterval: 200 },
          // Polls too far apart to matter: these queues are drained by wake-ups alone.
          rated: { concurrency: 20, rateLimit: { limit: 5, period: 300 }, pollInterval: 120_000 },
          prefetched: { concurrency: 2, prefetch: 20, rateLimit: { limit: 5, period: 300 }, pollInterval: 120_000 },
        },
      },
    });
    producer = app.get(QueueProducer);
    handlers = app.get(FlowHandlers);
    await sql('CREATE TABLE flow_runs (job_id bigint, started timestamptz, ended timestamptz)');
    await sql('CREATE TABLE flow_done (seq bigserial PRIMARY KEY, key text NOT NULL)');
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('never runs more than keyConcurrency attempts of one key at once, over all its slots', async () => {
    const items = Array.from({ length: 60 }, (_, i) => ({
      kind: 'flow.keyed',
      args: { ms: 20 },
      concurrencyKey: `tenant-${i % 6}`,
    }));
    await producer.enqueueMany(items);
    await waitFor(
      async () => (await sql(`SELECT count(*)::int AS n FROM flow_runs WHERE ended IS NOT NULL`))[0].n === 60,
    );
    const runs = await sql(
      `SELECT j.concurrency_key AS "group", extract(epoch FROM r.started)::float8 * 1000 AS start,
              extract(epoch FROM r.ended)::float8 * 1000 AS "end"
         FROM flow_runs r JOIN awa.all_jobs j ON j.id = r.job_id`,
    );
    expect(maxOverlap(runs)).toBe(2);
  });

  it('serves keys round-robin: 20 small keys finish before a 20,000-job key has done 20% of its jobs', async () => {
    const BIG = 20_000;
    await sql(
      `INSERT INTO awa.jobs (kind, queue, args, concurrency_key)
       SELECT 'flow.fair', 'fair', '{"key": "big"}', 'big' FROM generate_series(1, ${BIG})`,
    );
    const small = Array.from({ length: 200 }, (_, i) => `small-${i % 20}`);
    await producer.enqueueMany(small.map((key) => ({ kind: 'flow.fair', args: { key }, concurrencyKey: key })));
    await waitFor(
      async () => (await sql(`SELECT count(*)::int AS n FROM flow_done WHERE key <> 'big'`))[0].n === 200,
      60_000,
    );
    // For each small key: how many big jobs had finished when its last job finished.
    const rows = await sql(
      `SELECT s.key, (SELECT count(*)::int FROM flow_done b WHERE b.key = 'big' AND b.seq < max(s.seq)) AS big_before
         FROM flow_done s WHERE s.key <> 'big' GROUP BY s.key`,
    );
    expect(rows).toHaveLength(20);
    for (const row of rows) expect(row.big_before).toBeLessThan(BIG / 5);
    await sql(
      `UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE queue = 'fair' AND state = 'available'`,
    );
  }, 90_000);

  it('starts at most `limit` attempts in any window of `period`, and sleeps until the next may start', async () => {
    await producer.enqueueMany(Array.from({ length: 17 }, () => ({ kind: 'flow.rated', args: {} })));
    // The poll interval is 120 s: only the wake-ups at the refills can drain this within the wait
    // (about a second; 30 s allowed, for a loaded CI machine).
    const stamps = await waitFor(async () => {
      const rows = await sql(
        `SELECT extract(epoch FROM attempted_at)::float8 * 1000 AS at FROM awa.all_jobs
          WHERE kind = 'flow.rated' AND state = 'completed'`,
      );
      return rows.length === 17 ? rows : null;
    }, 30_000);
    expect(
      maxInWindow(
        stamps.map((r: { at: number }) => r.at),
        300,
      ),
    ).toBeLessThanOrEqual(5);
  });

  it('with prefetch, starts at most `limit` handlers in any window, and gives back what cannot start in time', async () => {
    await producer.enqueueMany(Array.from({ length: 17 }, () => ({ kind: 'flow.prefetched', args: {} })));
    const done = await waitFor(async () => {
      const rows = await sql(
        `SELECT attempt, errors FROM awa.all_jobs WHERE kind = 'flow.prefetched' AND state = 'completed'`,
      );
      return rows.length === 17 ? rows : null;
    }, 40_000);
    expect(handlers.prefetchedStarts).toHaveLength(17);
    expect(maxInWindow(handlers.prefetchedStarts, 300)).toBeLessThanOrEqual(5);
    // The first claim took 5 jobs for 2 slots: 3 waited past the buffer wait and went back, unspent.
    expect(done.every((j: { attempt: number }) => j.attempt === 1)).toBe(true);
    const givenBack = done.filter((j: { errors: unknown[] }) =>
      JSON.stringify(j.errors).includes(RescueErrors.releasedUnstarted),
    );
    expect(givenBack.length).toBeGreaterThan(0);
  }, 60_000);

  it.each(['marker', 'throw'] as const)(
    'backs off (%s) without spending an attempt, then runs the job again',
    async (how) => {
      const { id } = await producer.enqueue('flow.backoff', { how });
      const job = await waitFor(async () => {
        const j = await producer.getJob(id);
        return j?.state === 'completed' ? j : null;
      });
      expect(job.attempt).toBe(1);
      expect(handlers.seen.filter((s) => s.id === id)).toEqual([
        { id, attempt: 1 },
        { id, attempt: 1 },
      ]);
    },
  );

  it('refuses a bad or missing concurrencyKey and a bad retryAfterMs with typed errors naming them', async () => {
    const error = await caught(() => producer.enqueue('flow.keyed', {}, { concurrencyKey: '' }));
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({ field: 'concurrencyKey' });
    const missing = await caught(() => producer.enqueue('flow.keyed', {}));
    expect(missing).toMatchObject({ field: 'concurrencyKey', message: FlowMessages.concurrencyKeyRequired('keyed') });
    expect(() => new RateLimitedError(-1)).toThrow(JobValueError);
    expect(caughtSync(() => new RateLimitedError(Number.NaN))).toMatchObject({ field: 'rateLimit' });
  });
});
