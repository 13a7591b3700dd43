import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobEventGroups, JobHandler, OnJobEvent, QueueProducer, type Job, type JobEvent } from 'nestjs-awa';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

/** Every event the audit group handled, in delivery order. */
const delivered: JobEvent[] = [];
/** Jobs of mix.snooze that snoozed already. */
const snoozed = new Set<string>();

@Injectable()
class MixedHandlers {
  @JobHandler('mix.ok') ok() {}

  @JobHandler('mix.flaky') flaky(job: Job) {
    if (job.attempt === 1) throw new Error('flaky once');
  }

  @JobHandler('mix.bad') bad() {
    throw new Error('always bad');
  }

  /** Snoozes once (a snooze gives the attempt back), then completes. */
  @JobHandler('mix.snooze') snooze(job: Job) {
    if (snoozed.has(job.id)) return undefined;
    snoozed.add(job.id);
    return job.snooze(10);
  }
}

@Injectable()
class Audit {
  @OnJobEvent(['completed', 'failed', 'cancelled', 'retrying', 'rescued', 'snoozed', 'released', 'deleted'], {
    group: 'audit',
  })
  record(event: JobEvent) {
    delivered.push(event);
  }
}

/** A group subscribed to everything sees each job's transitions once each, in order, ending in its final state. */
describe('durable job events over a mixed workload', () => {
  let db: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [MixedHandlers, Audit],
      awa: { jobEvents: { pollInterval: 50 } },
    });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("delivers every job's transitions once, in order, the last one in the job's final state", async () => {
    const producer = app.get(QueueProducer);
    const expected = new Map<string, string[]>();
    const add = async (kind: string, events: string[], options = {}) => {
      for (let i = 0; i < 5; i++) expected.set((await producer.enqueue(kind, { i }, options)).id, events);
    };
    await add('mix.ok', ['completed']);
    await add('mix.flaky', ['retrying', 'completed']);
    await add('mix.bad', ['retrying', 'failed'], { maxAttempts: 2 });
    await add('mix.snooze', ['snoozed', 'completed']);
    await add('mix.later', ['cancelled'], { runAt: new Date(Date.now() + 3_600_000) });
    for (const [id, events] of expected) if (events[0] === 'cancelled') await producer.cancel(id);

    const total = [...expected.values()].reduce((n, events) => n + events.length, 0);
    await waitFor(() => delivered.length >= total, 30_000, 'every event');
    const [audit] = await waitFor(async () => {
      const groups = await app.get(JobEventGroups).groups();
      return groups[0]?.lagEvents === 0 ? groups : undefined;
    });
    expect(audit!.failures).toBe(0);
    expect(delivered).toHaveLength(total);
    for (const [id, events] of expected) {
      const mine = delivered.filter((e) => e.jobId === id);
      expect({ id, events: mine.map((e) => e.event) }).toEqual({ id, events });
      const job = await producer.getJob(id);
      expect(mine.at(-1)!.state).toBe(job!.state);
      expect(mine.at(-1)!.attempt).toBe(job!.attempt);
    }
    expect(new Set(delivered.map((e) => e.id)).size).toBe(total);
  });
});
