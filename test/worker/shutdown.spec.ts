import { Injectable } from '@nestjs/common';
import { JobHandler, QueueProducer, RescueErrors, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class SlowAndStuck {
  /** The jobs whose handler was entered. A job is `running` in the table from its claim on, before its handler starts. */
  readonly entered = new Set<string>();
  constructor(private readonly producer: QueueProducer) {}

  /** Enqueues its follow-up after the app has begun to close: the producer must still work. */
  @JobHandler('with.follow-up')
  async withFollowUp(job: Job) {
    this.entered.add(job.id);
    await new Promise((r) => setTimeout(r, 300));
    await this.producer.enqueue('follow-up', { after: job.id }, { runAt: new Date(Date.now() + 3_600_000) });
  }

  @JobHandler('quick.finish')
  async finish(job: Job) {
    this.entered.add(job.id);
    await new Promise((r) => setTimeout(r, 300));
  }

  @JobHandler('stuck')
  stuck(job: Job) {
    this.entered.add(job.id);
    return new Promise(() => undefined);
  }
}

/** app.close(): stop claiming, let handlers finish within shutdownTimeout, release the rest. */
describe('shutdown', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('completes what finishes in time and releases what does not, without spending an attempt', async () => {
    const app = await startTestApp({ url: db.url, providers: [SlowAndStuck], awa: { shutdownTimeout: 1_500 } });
    const observer = await startTestApp({ url: db.url });
    try {
      const producer = observer.get(QueueProducer);
      const quick = await producer.enqueue('quick.finish', {});
      const stuck = await producer.enqueue('stuck', {});
      const entered = app.get(SlowAndStuck).entered;
      await waitFor(() => entered.has(quick.id) && entered.has(stuck.id));
      await app.close();

      expect(await producer.getJob(quick.id)).toMatchObject({ state: 'completed', attempt: 1 });
      expect(await producer.getJob(stuck.id)).toMatchObject({
        state: 'available',
        attempt: 0,
        errors: [expect.objectContaining({ attempt: 1, error: RescueErrors.releasedOnShutdown })],
      });
      const instances = await observer.get(DataSource).query('SELECT count(*)::int AS n FROM awa.instances');
      expect(instances[0].n).toBe(1); // only the observer is left registered
    } finally {
      // Released 'stuck' jobs would hang the next test's app: take them out of play.
      await observer
        .get(DataSource)
        .query(
          `UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE kind = 'stuck' AND state = 'available'`,
        );
      await observer.close();
    }
  });

  it('gives back prefetched jobs that never started at once, with the running ones', async () => {
    const app = await startTestApp({
      url: db.url,
      providers: [SlowAndStuck],
      awa: { shutdownTimeout: 500, queues: { default: { concurrency: 1, prefetch: 4 } } },
    });
    const observer = await startTestApp({ url: db.url });
    try {
      const dataSource = observer.get(DataSource);
      const jobs = await observer
        .get(QueueProducer)
        .enqueueMany(Array.from({ length: 5 }, () => ({ kind: 'stuck', args: {} })));
      // One runs, four wait in the buffer: all five are leased (and heartbeated).
      await waitFor(
        async () => (await dataSource.query('SELECT count(*)::int AS n FROM awa.active_leases'))[0].n === 5,
      );
      await app.close();
      const rows = await dataSource.query('SELECT state, attempt FROM awa.all_jobs WHERE id = ANY($1)', [
        jobs.map((j) => j.id),
      ]);
      expect(rows).toEqual(Array.from({ length: 5 }, () => ({ state: 'available', attempt: 0 })));
      expect(await dataSource.query('SELECT * FROM awa.active_leases')).toEqual([]);
    } finally {
      // Released 'stuck' jobs would hang the next test's app: take them out of play.
      await observer
        .get(DataSource)
        .query(
          `UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE kind = 'stuck' AND state = 'available'`,
        );
      await observer.close();
    }
  });

  it('keeps QueueProducer working while handlers drain, so they can enqueue follow-ups', async () => {
    const app = await startTestApp({ url: db.url, providers: [SlowAndStuck], awa: { shutdownTimeout: 5_000 } });
    const observer = await startTestApp({ url: db.url });
    try {
      const producer = observer.get(QueueProducer);
      const { id } = await producer.enqueue('with.follow-up', {});
      await waitFor(() => app.get(SlowAndStuck).entered.has(id));
      await app.close();
      expect((await producer.getJob(id))?.state).toBe('completed');
      const followUps = await observer.get(DataSource).query(`SELECT args FROM awa.all_jobs WHERE kind = 'follow-up'`);
      expect(followUps).toEqual([{ args: { after: id } }]);
    } finally {
      // Released 'stuck' jobs would hang the next test's app: take them out of play.
      await observer
        .get(DataSource)
        .query(
          `UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE kind = 'stuck' AND state = 'available'`,
        );
      await observer.close();
    }
  });
});
