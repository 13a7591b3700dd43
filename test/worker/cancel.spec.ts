import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AbortReasons, JobHandler, QueueProducer, RescueErrors, type Job } from 'nestjs-awa';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class Cooperative {
  reasons = new Map<string, unknown>();
  @JobHandler('cooperative')
  async run(job: Job) {
    await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve(), { once: true }));
    this.reasons.set(job.id, job.signal.reason);
  }
}

/** producer.cancel(): waiting jobs at once, running ones through their signal, finished ones untouched. */
describe('cancellation', () => {
  let db: TestDatabase;
  let worker: TestingModule;
  let producerApp: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    worker = await startTestApp({ url: db.url, providers: [Cooperative] });
    // A second instance without handlers: a cancel from here must reach the worker via NOTIFY.
    producerApp = await startTestApp({ url: db.url });
  });
  afterAll(async () => {
    await producerApp?.close();
    await worker?.close();
    await db?.drop();
  });

  it('cancels a waiting job at once', async () => {
    const producer = producerApp.get(QueueProducer);
    const { id } = await producer.enqueue('cooperative', {}, { runAt: new Date(Date.now() + 3_600_000) });
    expect(await producer.cancel(id)).toEqual({ outcome: 'cancelled', previousState: 'scheduled' });
    expect(await producer.getJob(id)).toMatchObject({
      state: 'cancelled',
      errors: [expect.objectContaining({ error: RescueErrors.cancelled })],
    });
  });

  it('aborts a job running on another instance, which then ends cancelled', async () => {
    const producer = producerApp.get(QueueProducer);
    const { id } = await producer.enqueue('cooperative', {});
    await waitFor(async () => (await producer.getJob(id))?.state === 'running');
    expect(await producer.cancel(id)).toEqual({ outcome: 'signalled', previousState: 'running' });
    const job = await waitFor(async () => {
      const j = await producer.getJob(id);
      return j?.state === 'cancelled' ? j : null;
    });
    expect(worker.get(Cooperative).reasons.get(id)).toBe(AbortReasons.cancelled);
    expect(job.finalizedAt).toBeInstanceOf(Date);
  });

  it('says so, and changes nothing, for a finished or unknown job', async () => {
    const producer = producerApp.get(QueueProducer);
    const { id } = await producer.enqueue('cooperative', {}, { runAt: new Date(Date.now() + 3_600_000) });
    await producer.cancel(id);
    expect(await producer.cancel(id)).toEqual({ outcome: 'already-finished', state: 'cancelled' });
    expect(await producer.cancel('987654321')).toEqual({ outcome: 'not-found' });
    expect(await producer.cancel('not a number')).toEqual({ outcome: 'not-found' });
  });
});
