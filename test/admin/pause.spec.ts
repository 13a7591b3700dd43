import type { TestingModule } from '@nestjs/testing';
import { QueueAdmin, QueueProducer } from 'nestjs-awa';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';

/**
 * Pause and resume across instances: this process (an app with no handlers) pauses, enqueues and
 * resumes; a real worker process runs the jobs. Every claim reads the pause from awa.queues, so to
 * know that the worker tried to claim while the queue was paused, the test holds an exclusive lock
 * on awa.queues and waits for a claim to queue up behind it: that claim began after the lock, so
 * after the pause and the enqueue. A second claim queued behind the lock again means the first
 * one has finished (a worker claims one batch at a time).
 */
describe('pause and resume across instances', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let admin: QueueAdmin;
  let producer: QueueProducer;
  let worker: WorkerProcess | undefined;
  let locker: pg.Client;

  const stateOf = async (id: string) =>
    (await queryOnce<{ state: string }>(db.url, 'SELECT state FROM awa.jobs WHERE id = $1', [id]))[0]?.state;

  /** Holds awa.queues until a claim waits for it; `rounds` times. */
  async function claimsAttempted(rounds: number): Promise<void> {
    for (let round = 0; round < rounds; round++) {
      await locker.query('BEGIN');
      try {
        await locker.query('LOCK TABLE awa.queues IN ACCESS EXCLUSIVE MODE');
        await waitFor(
          async () =>
            (
              await queryOnce<{ n: number }>(
                db.url,
                `SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'awa.queues'::regclass AND NOT granted`,
              )
            )[0]!.n > 0,
          15_000,
          'a claim waiting for awa.queues',
        );
      } finally {
        await locker.query('ROLLBACK');
      }
    }
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url }); // no handlers: this instance claims nothing
    admin = app.get(QueueAdmin);
    producer = app.get(QueueProducer);
    locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
  });
  afterAll(async () => {
    await locker?.end();
    if (worker) {
      worker.kill('SIGTERM');
      await worker.exit();
    }
    await app?.close();
    await db?.drop();
  });

  it('a job enqueued while paused runs only after resume, on another instance (paused at its boot)', async () => {
    await admin.pauseQueue('default');
    const early = await producer.enqueue('fixture.sleep', { ms: 0 });

    // An instance that boots while the queue is paused claims nothing from it.
    worker = new WorkerProcess(db.url, FAST_OPTIONS);
    await worker.ready();
    await claimsAttempted(2);
    expect(await stateOf(early.id)).toBe('available');

    await admin.resumeQueue('default');
    await worker.waitForLine(new RegExp(`^DONE ${early.id}$`));

    // Paused again while the worker runs: a job enqueued now waits for the resume.
    await admin.pauseQueue('default');
    const late = await producer.enqueue('fixture.sleep', { ms: 0 });
    await claimsAttempted(2);
    expect(await stateOf(late.id)).toBe('available');

    await admin.resumeQueue('default');
    await worker.waitForLine(new RegExp(`^DONE ${late.id}$`));
    const runs = await app
      .get(DataSource)
      .query('SELECT job_id::text AS id, attempt, pid FROM fixture_runs ORDER BY at');
    expect(runs).toEqual([
      { id: early.id, attempt: 1, pid: worker.pid },
      { id: late.id, attempt: 1, pid: worker.pid },
    ]);
  });

  it('lets a running job finish when its queue is paused', async () => {
    const job = await producer.enqueue('fixture.sleep', { ms: 500 });
    await worker!.waitForLine(new RegExp(`^START ${job.id} `));
    await admin.pauseQueue('default');
    await worker!.waitForLine(new RegExp(`^DONE ${job.id}$`));
    expect(await waitFor(async () => (await stateOf(job.id)) === 'completed')).toBe(true);
    await admin.resumeQueue('default');
  });
});
