import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AbortReasons, JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { AWA_CANCEL_CHANNEL } from '../../lib/awa.constants.js';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class CancelHandlers {
  readonly started: string[] = [];
  readonly reasons = new Map<string, unknown>();

  /** Returns when its signal aborts. */
  @JobHandler('until.aborted')
  async untilAborted(job: Job) {
    this.started.push(job.id);
    await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true }));
    this.reasons.set(job.id, job.signal.reason);
  }

  /** Ignores its signal and never settles. */
  @JobHandler('stubborn')
  stubborn(job: Job) {
    this.started.push(job.id);
    return new Promise(() => undefined);
  }
}

/** A cancel request is stored with the running attempt: every later transition honours it. */
describe('a stored cancel request', () => {
  let db: TestDatabase;
  let producerApp: TestingModule;
  const stateOf = async (id: string) => (await producerApp.get(QueueProducer).getJob(id))?.state;

  beforeAll(async () => {
    db = await createTestDatabase();
    producerApp = await startTestApp({ url: db.url });
  });
  afterAll(async () => {
    await producerApp?.close();
    await db?.drop();
  });

  it('reaches the handler through the heartbeat when the notification is lost', async () => {
    const worker = await startTestApp({ url: db.url, providers: [CancelHandlers] });
    try {
      // The worker's session drops every awa_cancel notification, as if it had been down.
      (worker.get(InstanceSession) as unknown as { channels: Map<string, unknown[]> }).channels.set(
        AWA_CANCEL_CHANNEL,
        [],
      );
      const producer = producerApp.get(QueueProducer);
      const { id } = await producer.enqueue('until.aborted', {});
      await waitFor(async () => (await stateOf(id)) === 'running');
      expect(await producer.cancel(id)).toEqual({ outcome: 'signalled', previousState: 'running' });
      await waitFor(async () => (await stateOf(id)) === 'cancelled', 15_000, 'the job to end cancelled');
      expect(worker.get(CancelHandlers).reasons.get(id)).toBe(AbortReasons.cancelled);
    } finally {
      await worker.close();
    }
  });

  it('never starts a buffered job that was cancelled', async () => {
    const worker = await startTestApp({
      url: db.url,
      providers: [CancelHandlers],
      awa: { queues: { default: { concurrency: 1, prefetch: 1, pollInterval: 200 } } },
    });
    try {
      const producer = producerApp.get(QueueProducer);
      const [holder, buffered] = await producer.enqueueMany([
        { kind: 'until.aborted', args: {} },
        { kind: 'until.aborted', args: {} },
      ]);
      await waitFor(
        async () =>
          (await queryOnce<{ n: number }>(db.url, 'SELECT count(*)::int AS n FROM awa.active_leases'))[0]!.n === 2,
      );
      expect(worker.get(CancelHandlers).started).toEqual([holder!.id]);
      expect(await producer.cancel(buffered!.id)).toEqual({ outcome: 'signalled', previousState: 'running' });
      expect(await producer.cancel(holder!.id)).toEqual({ outcome: 'signalled', previousState: 'running' });
      await waitFor(
        async () => (await stateOf(holder!.id)) === 'cancelled' && (await stateOf(buffered!.id)) === 'cancelled',
      );
      expect(worker.get(CancelHandlers).started).toEqual([holder!.id]);
    } finally {
      await worker.close();
    }
  });

  it('ends a job released on shutdown cancelled, not available again', async () => {
    const worker = await startTestApp({ url: db.url, providers: [CancelHandlers], awa: { shutdownTimeout: 300 } });
    const producer = producerApp.get(QueueProducer);
    const { id } = await producer.enqueue('stubborn', {});
    try {
      await waitFor(async () => (await stateOf(id)) === 'running');
      expect(await producer.cancel(id)).toEqual({ outcome: 'signalled', previousState: 'running' });
    } finally {
      await worker.close();
    }
    expect(await producer.getJob(id)).toMatchObject({ state: 'cancelled', attempt: 1 });
    expect(await queryOnce(db.url, 'SELECT job_id FROM awa.active_leases')).toEqual([]);
  });
});
