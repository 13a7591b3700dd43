import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, RescueErrors, type Job } from 'nestjs-awa';
import { SHUTDOWN_RELEASE_LIMIT } from '../../lib/sql/worker.sql.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class Stubborn {
  /** Ignores its signal and never settles: it always outlives shutdownTimeout. */
  @JobHandler('stubborn')
  stubborn(_job: Job) {
    return new Promise(() => undefined);
  }
}

/** A handler that always outlives shutdownTimeout does not get its attempt back forever. */
describe('shutdown releases of one job', () => {
  let db: TestDatabase;
  let observer: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    observer = await startTestApp({ url: db.url });
  });
  afterAll(async () => {
    await observer?.close();
    await db?.drop();
  });

  it(`give the attempt back ${SHUTDOWN_RELEASE_LIMIT - 1} times in a row, then spend it`, async () => {
    const producer = observer.get(QueueProducer);
    const { id } = await producer.enqueue('stubborn', {}, { maxAttempts: 10 });
    const states: unknown[] = [];
    let lastLease = 0n; // each claim gives a higher run lease
    for (let round = 1; round <= SHUTDOWN_RELEASE_LIMIT; round++) {
      const worker = await startTestApp({ url: db.url, providers: [Stubborn], awa: { shutdownTimeout: 200 } });
      try {
        await waitFor(
          async () => {
            const job = await producer.getJob(id);
            if (job?.state !== 'running' || BigInt(job.runLease) <= lastLease) return undefined;
            lastLease = BigInt(job.runLease);
            return true;
          },
          15_000,
          `claim ${round}`,
        );
      } finally {
        await worker.close();
      }
      const job = await producer.getJob(id);
      states.push({ state: job?.state, attempt: job?.attempt });
    }
    // The spent attempt waits out its retry backoff as retryable; under load, maintenance may already
    // have promoted it to available when the test reads it. Either way attempt 1 is spent.
    const last = states.pop() as { state: string; attempt: number };
    expect(states).toEqual(
      Array.from({ length: SHUTDOWN_RELEASE_LIMIT - 1 }, () => ({ state: 'available', attempt: 0 })),
    );
    expect(last.attempt).toBe(1);
    expect(['retryable', 'available']).toContain(last.state);
    const job = await producer.getJob(id);
    expect(job?.errors.map((e) => e.error)).toEqual(
      Array(SHUTDOWN_RELEASE_LIMIT).fill(RescueErrors.releasedOnShutdown),
    );
    // Out of play for good: no worker is left, but keep the next test file's apps from meeting it.
    await producer.cancel(id);
  });
});
