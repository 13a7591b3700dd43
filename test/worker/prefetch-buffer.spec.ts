import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { HeartbeatService, JobHandler, QueueProducer, RescueErrors, type Job } from 'nestjs-awa';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class BufferHandlers {
  readonly started: string[] = [];
  /** Handlers started and neither settled nor aborted, now and at most. */
  live = 0;
  maxLive = 0;

  private enter(job: Job): () => void {
    this.started.push(job.id);
    this.maxLive = Math.max(this.maxLive, ++this.live);
    let left = false;
    const leave = () => {
      if (!left) this.live--;
      left = true;
    };
    job.signal.addEventListener('abort', leave, { once: true });
    return leave;
  }

  @JobHandler('hang')
  hang(job: Job) {
    this.enter(job);
    return new Promise(() => undefined);
  }

  /** Sleeps args.ms, then returns. */
  @JobHandler('nap')
  async nap(job: Job<{ ms: number }>) {
    const leave = this.enter(job);
    await new Promise((r) => setTimeout(r, job.args.ms));
    leave();
  }

  /** Returns when its signal aborts. */
  @JobHandler('until.aborted')
  async untilAborted(job: Job) {
    const leave = this.enter(job);
    await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true }));
    leave();
  }
}

/** The prefetch buffer: claimed, leased jobs waiting for a slot. */
describe('the prefetch buffer', () => {
  let db: TestDatabase;
  let observer: TestingModule;
  const stateOf = async (id: string) => (await observer.get(QueueProducer).getJob(id))?.state;

  beforeAll(async () => {
    db = await createTestDatabase();
    observer = await startTestApp({ url: db.url });
  });
  afterAll(async () => {
    await observer?.close();
    await db?.drop();
  });

  it('never runs more handlers than concurrency, even when buffered jobs outlived their deadline', async () => {
    const worker = await startTestApp({
      url: db.url,
      providers: [BufferHandlers],
      awa: {
        queues: { default: { concurrency: 1, prefetch: 2, deadlineDuration: 400, maxAttempts: 1, pollInterval: 100 } },
      },
    });
    try {
      const jobs = await observer
        .get(QueueProducer)
        .enqueueMany(Array.from({ length: 3 }, () => ({ kind: 'hang', args: {}, maxAttempts: 1 })));
      let states: unknown[] = [];
      await waitFor(
        async () => (states = await Promise.all(jobs.map((j) => stateOf(j.id)))).every((s) => s === 'failed'),
        30_000,
        'every job to fail',
      ).catch((error) => {
        throw new Error(
          `${String(error)}: ${JSON.stringify(states)}, max ${worker.get(BufferHandlers).maxLive} handlers at once`,
        );
      });
      const handlers = worker.get(BufferHandlers);
      expect(handlers.maxLive).toBe(1);
      const rows = await queryOnce<{ attempt: number; errors: Array<{ error: string }> }>(
        db.url,
        'SELECT attempt, errors FROM awa.all_jobs WHERE id = ANY($1::bigint[])',
        [jobs.map((j) => j.id)],
      );
      // Each ran exactly once and ended at its own deadline; a wait in the buffer spent nothing (a
      // job that waited too long was given back, unstarted, and claimed again).
      for (const row of rows) {
        expect(row.attempt).toBe(1);
        expect(row.errors.map((e) => e.error).filter((e) => e !== RescueErrors.releasedUnstarted)).toEqual([
          RescueErrors.deadlineExceeded,
        ]);
      }
    } finally {
      await worker.close();
    }
  });

  it('drops a buffered job whose lease was rescued, without running it', async () => {
    const worker = await startTestApp({
      url: db.url,
      providers: [BufferHandlers],
      awa: { queues: { default: { concurrency: 1, prefetch: 1 } } },
    });
    try {
      const producer = observer.get(QueueProducer);
      const [holder, buffered] = await producer.enqueueMany([
        { kind: 'until.aborted', args: {} },
        { kind: 'nap', args: { ms: 1 } },
      ]);
      await waitFor(
        async () =>
          (await queryOnce<{ n: number }>(db.url, 'SELECT count(*)::int AS n FROM awa.active_leases'))[0]!.n === 2,
      );
      // What a rescue does to the buffered job: its lease goes, the job waits for a retry.
      await queryOnce(
        db.url,
        `WITH gone AS (DELETE FROM awa.active_leases WHERE job_id = $1::bigint)
        UPDATE awa.jobs SET state = 'retryable', run_at = now() + interval '1 hour' WHERE id = $1::bigint`,
        [buffered!.id],
      );
      await waitFor(async () => (await worker.get(HeartbeatService).tick()) !== undefined, 15_000, 'a heartbeat tick');
      await producer.cancel(holder!.id); // frees the slot
      await waitFor(async () => (await stateOf(holder!.id)) === 'cancelled');
      expect(worker.get(BufferHandlers).started).toEqual([holder!.id]);
      expect(await stateOf(buffered!.id)).toBe('retryable');
    } finally {
      await worker.close();
    }
  });

  it('starts the deadline of a prefetched job when the job starts, not while it waits', async () => {
    const worker = await startTestApp({
      url: db.url,
      providers: [BufferHandlers],
      awa: { queues: { default: { concurrency: 1, prefetch: 1, deadlineDuration: 4_000, maxAttempts: 1 } } },
    });
    try {
      // The second waits about 1.5 s in the buffer (less than its wait limit, 2 s), then runs 3 s:
      // longer than its deadline counted from the claim, well within it counted from its start.
      // The leader's deadline sweep (every 200 ms) would end it too if its lease kept the claim's.
      const [first, second] = await observer.get(QueueProducer).enqueueMany([
        { kind: 'nap', args: { ms: 1_500 }, maxAttempts: 1 },
        { kind: 'nap', args: { ms: 3_000 }, maxAttempts: 1 },
      ]);
      const finished = (s: unknown) => s === 'completed' || s === 'failed';
      await waitFor(
        async () => finished(await stateOf(first!.id)) && finished(await stateOf(second!.id)),
        20_000,
        'both jobs to finish',
      );
      expect(await stateOf(first!.id)).toBe('completed');
      expect(await observer.get(QueueProducer).getJob(second!.id)).toMatchObject({ attempt: 1, errors: [] });
    } finally {
      await worker.close();
    }
  });
});
