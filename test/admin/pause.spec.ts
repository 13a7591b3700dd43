import type { TestingModule } from '@nestjs/testing';
import { QueueAdmin, QueueProducer } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';
import { ClaimObserver } from './claim-observer.js';

/**
 * Pause and resume across instances: this process (an app with no handlers) pauses, enqueues and
 * resumes; a real worker process runs the jobs. ClaimObserver shows that the worker tried to claim
 * while the queue was paused, after the enqueue.
 */
describe('pause and resume across instances', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let admin: QueueAdmin;
  let producer: QueueProducer;
  let worker: WorkerProcess | undefined;
  let claims: ClaimObserver;

  const stateOf = async (id: string) =>
    (await queryOnce<{ state: string }>(db.url, 'SELECT state FROM awa.all_jobs WHERE id = $1', [id]))[0]?.state;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url }); // no handlers: this instance claims nothing
    admin = app.get(QueueAdmin);
    producer = app.get(QueueProducer);
    claims = await ClaimObserver.connect(db.url);
  });
  afterAll(async () => {
    await claims?.close();
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
    await claims.claimsAttempted();
    expect(await stateOf(early.id)).toBe('available');

    await admin.resumeQueue('default');
    await worker.waitForLine(new RegExp(`^DONE ${early.id}$`));

    // Paused again while the worker runs: a job enqueued now waits for the resume.
    await admin.pauseQueue('default');
    const late = await producer.enqueue('fixture.sleep', { ms: 0 });
    await claims.claimsAttempted();
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
