import { Injectable } from '@nestjs/common';
import { JobHandler, QueueAdmin, QueueProducer, type Job } from 'nestjs-awa';
import { AwaTesting } from 'nestjs-awa/testing';
import { useManualApp } from './testing-app.js';

const HOUR = 3_600_000;

@Injectable()
class Calls {
  readonly log: string[] = [];

  @JobHandler('api.call', { queue: 'rated' })
  async call(job: Job<{ n: number }>) {
    this.log.push(`call ${job.args.n}`);
  }

  @JobHandler('tenant.sync', { queue: 'keyed' })
  async sync(job: Job<{ tenant: string }>) {
    this.log.push(`sync ${job.args.tenant}`);
  }

  /** Backs off for an hour: its key is held that long. */
  @JobHandler('tenant.busy', { queue: 'keyed' })
  busy(job: Job<{ tenant: string }>) {
    this.log.push(`busy ${job.args.tenant}`);
    return job.rateLimit(HOUR);
  }
}

/** drain claims a flow-controlled queue as its workers do: through the flow claim, not around it. */
describe('AwaTesting.drain on paused and flow-controlled queues', () => {
  const block = useManualApp([Calls], {
    queues: { rated: { rateLimit: { limit: 2, period: HOUR } }, keyed: { keyConcurrency: 1 } },
  });
  let producer: QueueProducer;
  let testing: AwaTesting;
  let calls: Calls;

  beforeAll(() => {
    producer = block.app.get(QueueProducer);
    testing = block.app.get(AwaTesting);
    calls = block.app.get(Calls);
  });
  beforeEach(() => {
    calls.log.length = 0;
  });

  it('runs nothing of a paused queue, then no more attempts than its rate limit allows', async () => {
    await Promise.all([1, 2, 3, 4, 5].map((n) => producer.enqueue('api.call', { n })));
    const admin = block.app.get(QueueAdmin);
    await admin.pauseQueue('rated');
    expect((await testing.drain({ queue: 'rated' })).jobs).toEqual([]);

    await admin.resumeQueue('rated');
    const result = await testing.drain({ queue: 'rated' });
    expect(result).toMatchObject({ completed: 2, failed: 0, retried: 0, cancelled: 0 });
    expect(calls.log).toHaveLength(2);
    expect(await testing.enqueuedJobs({ queue: 'rated' })).toHaveLength(3);
  });

  it('holds the key of an attempt that backed off: no other job of that key runs', async () => {
    const { id: busy } = await producer.enqueue('tenant.busy', { tenant: 'a' }, { concurrencyKey: 'a' });
    const { id: held } = await producer.enqueue('tenant.sync', { tenant: 'a' }, { concurrencyKey: 'a' });
    await producer.enqueue('tenant.sync', { tenant: 'b' }, { concurrencyKey: 'b' });

    const result = await testing.drain({ queue: 'keyed' });
    expect(calls.log.sort()).toEqual(['busy a', 'sync b']);
    expect(result).toMatchObject({ completed: 1, failed: 0, retried: 0, cancelled: 0 });
    const waiting = (await testing.enqueuedJobs({ queue: 'keyed' })).map((j) => j.id);
    expect(waiting.sort()).toEqual([busy, held].sort());
  });

  it('runs, in drain(), the keyed job that an earlier drain({ kind }) of another kind passed over', async () => {
    const { id } = await producer.enqueue('tenant.sync', { tenant: 'c' }, { concurrencyKey: 'c' });
    expect((await testing.drain({ kind: 'tenant.busy' })).jobs).toEqual([]);
    const result = await testing.drain();
    expect(result.jobs.map((j) => j.id)).toEqual([id]);
    expect(calls.log).toEqual(['sync c']);
  });
});
