import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { finishedJob } from '../support/job-waits.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

@Injectable()
class PingHandler {
  @JobHandler('ping') ping() {}
}

/**
 * In 'transaction-pooler' mode there is no LISTEN, and the queue polls once an hour: a job enqueued
 * outside a transaction is claimed at once only because the producer wakes this instance's worker.
 */
describe('QueueProducer wakes the local workers', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [PingHandler],
      awa: {
        connectionMode: 'transaction-pooler',
        livenessProbe: 'heartbeat',
        queues: { default: { pollInterval: 3_600_000 } },
      },
    });
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('an enqueue wakes the idle worker of its queue, with no NOTIFY and no poll due', async () => {
    // The first job may meet the worker's first claim; after it, the worker idles until its next poll.
    const first = await producer.enqueue('ping', {});
    expect((await finishedJob(producer, first.id)).state).toBe('completed');
    const second = await producer.enqueue('ping', {});
    expect((await finishedJob(producer, second.id)).state).toBe('completed');
  });
});
