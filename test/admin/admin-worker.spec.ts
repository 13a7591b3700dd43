import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueAdmin, QueueProducer, type Job } from 'nestjs-awa';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';
import { ClaimObserver } from './claim-observer.js';

const runs: Array<{ id: string; attempt: number }> = [];

@Injectable()
class AdminHandlers {
  @JobHandler('admin.ok') ok(job: Job) {
    runs.push({ id: job.id, attempt: job.attempt });
  }

  @JobHandler('admin.fail') fail(job: Job) {
    runs.push({ id: job.id, attempt: job.attempt });
    throw new Error(`failed attempt ${job.attempt}`);
  }
}

/**
 * QueueAdmin with workers in the same app, in 'transaction-pooler' mode: no LISTEN, so a resume
 * reaches the worker by its poll alone, and every claim still reads the pause.
 */
describe('QueueAdmin beside a running worker (polling only)', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let admin: QueueAdmin;
  let producer: QueueProducer;
  let claims: ClaimObserver;
  const runsOf = (id: string) => runs.filter((r) => r.id === id).map((r) => r.attempt);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [AdminHandlers],
      awa: { connectionMode: 'transaction-pooler', livenessProbe: 'heartbeat' },
    });
    admin = app.get(QueueAdmin);
    producer = app.get(QueueProducer);
    claims = await ClaimObserver.connect(db.url);
  });
  afterAll(async () => {
    await claims?.close();
    await app?.close();
    await db?.drop();
  });

  it('holds a job enqueued while paused until the resume, which the poll picks up', async () => {
    await admin.pauseQueue('default');
    const { id } = await producer.enqueue('admin.ok', {});
    await claims.claimsAttempted();
    expect(runsOf(id)).toEqual([]);
    expect((await admin.getJob(id))?.state).toBe('available');
    await admin.resumeQueue('default');
    await waitFor(async () => (await admin.getJob(id))?.state === 'completed');
    expect(runsOf(id)).toEqual([1]);
  });

  it('a retried failed job runs again with a fresh attempt budget and keeps its errors', async () => {
    const { id } = await producer.enqueue('admin.fail', {}, { maxAttempts: 1 });
    await waitFor(async () => (await admin.getJob(id))?.state === 'failed');
    expect(await admin.retryJob(id)).toEqual({ outcome: 'retried' });
    const job = await waitFor(async () => {
      const current = await admin.getJob(id);
      return current?.state === 'failed' && current.errors.length === 2 ? current : undefined;
    });
    expect(runsOf(id)).toEqual([1, 1]);
    expect(job.errors.map((e) => [e.attempt, e.error])).toEqual([
      [1, 'Error: failed attempt 1'],
      [1, 'Error: failed attempt 1'],
    ]);
  });
});
