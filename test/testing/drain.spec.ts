import { Injectable } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AwaErrorCodes, AwaOptionError, JobHandler, QueueProducer, RescueErrors, type Job } from 'nestjs-awa';
import { AwaTesting } from 'nestjs-awa/testing';
import { caught } from '../support/caught.js';
import { useManualApp } from './testing-app.js';

@Injectable()
class Shop {
  readonly log: string[] = [];
  constructor(private readonly producer: QueueProducer) {}

  @JobHandler('order.place')
  async place(job: Job<{ order: number }>) {
    this.log.push(`place ${job.args.order}`);
    await this.producer.enqueue('mail.send', { to: `customer-${job.args.order}` });
  }

  @JobHandler('mail.send', { queue: 'mail' })
  async send(job: Job<{ to: string }>) {
    this.log.push(`send ${job.args.to}`);
  }

  @JobHandler('flaky', { queue: 'mail' })
  async flaky(job: Job<{ failUntil: number }>) {
    this.log.push(`flaky ${job.attempt}`);
    if (job.attempt < job.args.failUntil) throw new Error(`attempt ${job.attempt} failed`);
  }

  @JobHandler('hang', { queue: 'slow' })
  async hang(job: Job) {
    // Runs until its hard deadline aborts it.
    await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
  }

  @JobHandler('self.cancel')
  async selfCancel(job: Job) {
    await this.producer.cancel(job.id); // a cancel request stored on the running attempt
  }
}

describe('AwaTesting.drain (testing: true)', () => {
  const block = useManualApp([Shop], {
    queues: {
      mail: { maxAttempts: 3, retryBaseDelay: 3_600_000, retryMaxDelay: 3_600_000 },
      slow: { deadlineDuration: 200, maxAttempts: 1 },
    },
  });
  let producer: QueueProducer;
  let testing: AwaTesting;
  let shop: Shop;
  let dataSource: DataSource;

  beforeAll(() => {
    producer = block.app.get(QueueProducer);
    testing = block.app.get(AwaTesting);
    shop = block.app.get(Shop);
    dataSource = block.app.get<DataSource>(getDataSourceToken());
  });
  beforeEach(async () => {
    shop.log.length = 0;
    await dataSource.query('DELETE FROM awa.jobs; DELETE FROM awa.job_history');
  });

  it('starts nothing in the background: no instance session, heartbeat, maintenance or workers', async () => {
    const scheduler = block.app.get(SchedulerRegistry);
    expect(scheduler.getIntervals()).toEqual([]);
    const instances = await dataSource.query('SELECT id FROM awa.instances');
    expect(instances).toEqual([]);
    const sessions = await dataSource.query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'awa:%'`,
    );
    expect(sessions).toEqual([]);
    const { id } = await producer.enqueue('order.place', { order: 1 });
    expect((await producer.getJob(id))?.state).toBe('available'); // nobody claimed it
  });

  it('runs every available job to completion, including the jobs those jobs enqueue', async () => {
    const { id } = await producer.enqueue('order.place', { order: 7 });
    const result = await testing.drain();
    expect(result).toMatchObject({ completed: 2, failed: 0, retried: 0, cancelled: 0 });
    expect(result.jobs).toEqual([
      { id, kind: 'order.place', queue: 'default', attempt: 1, state: 'completed' },
      { id: expect.any(String), kind: 'mail.send', queue: 'mail', attempt: 1, state: 'completed' },
    ]);
    expect(shop.log).toEqual(['place 7', 'send customer-7']);
    const stored = await producer.getJob(id);
    expect(stored).toMatchObject({ state: 'completed', attempt: 1 });
    expect(await dataSource.query('SELECT job_id FROM awa.active_leases')).toEqual([]);
  });

  it('reports a failed attempt as retried, with the error, and leaves a not yet due retry alone', async () => {
    const { id } = await producer.enqueue('flaky', { failUntil: 2 });
    const result = await testing.drain();
    expect(result).toMatchObject({ completed: 0, failed: 0, retried: 1, cancelled: 0 });
    expect(result.jobs).toEqual([
      { id, kind: 'flaky', queue: 'mail', attempt: 1, state: 'retryable', error: 'Error: attempt 1 failed' },
    ]);
    expect((await producer.getJob(id))?.errors).toMatchObject([{ attempt: 1, error: 'Error: attempt 1 failed' }]);
  });

  it('withScheduled runs future scheduled jobs and retries as if due, until attempts are spent', async () => {
    const later = new Date(Date.now() + 3_600_000);
    const { id: scheduled } = await producer.enqueue('mail.send', { to: 'later' }, { runAt: later });
    const { id: failing } = await producer.enqueue('flaky', { failUntil: 99 });

    const plain = await testing.drain({ kind: 'mail.send' });
    expect(plain.jobs).toEqual([]);
    expect((await producer.getJob(scheduled))?.state).toBe('scheduled');

    const result = await testing.drain({ withScheduled: true });
    expect(result).toMatchObject({ completed: 1, failed: 1, retried: 2, cancelled: 0 });
    expect(result.jobs.filter((j) => j.id === failing).map((j) => [j.attempt, j.state])).toEqual([
      [1, 'retryable'],
      [2, 'retryable'],
      [3, 'failed'],
    ]);
    expect(await producer.getJob(scheduled)).toMatchObject({ state: 'completed' });
  });

  it('runs only the given queue or kinds', async () => {
    await producer.enqueue('order.place', { order: 1 });
    await producer.enqueue('mail.send', { to: 'direct' });

    const mail = await testing.drain({ queue: 'mail' });
    expect(mail.jobs.map((j) => j.kind)).toEqual(['mail.send']);
    const orders = await testing.drain({ kind: ['order.place'] });
    expect(orders.jobs.map((j) => j.kind)).toEqual(['order.place']); // its mail.send is not a drained kind
    expect(shop.log).toEqual(['send direct', 'place 1']);
    expect((await testing.enqueuedJobs({ kind: 'mail.send' })).map((j) => j.args)).toEqual([{ to: 'customer-1' }]);
  });

  it('writes results through the fenced statements: a cancel request ends the attempt cancelled', async () => {
    const { id } = await producer.enqueue('self.cancel', {});
    const result = await testing.drain();
    expect(result).toMatchObject({ completed: 0, cancelled: 1 });
    expect(result.jobs).toEqual([{ id, kind: 'self.cancel', queue: 'default', attempt: 1, state: 'cancelled' }]);
  });

  it('ends an attempt at its hard deadline, as a worker does', async () => {
    const { id } = await producer.enqueue('hang', {});
    const result = await testing.drain({ queue: 'slow' });
    expect(result).toMatchObject({ completed: 0, failed: 1 });
    expect(result.jobs).toEqual([
      { id, kind: 'hang', queue: 'slow', attempt: 1, state: 'failed', error: RescueErrors.deadlineExceeded },
    ]);
  });

  it.each<[string, object, string]>([
    ['a queue without handlers', { queue: 'nope' }, 'queue'],
    ['a kind without a handler', { kind: 'nope' }, 'kind'],
    ['a misspelt option', { withScheduld: true }, 'withScheduld'],
    ['a non-boolean withScheduled', { withScheduled: 'yes' }, 'withScheduled'],
  ])('refuses %s with an AwaOptionError naming it', async (_what, options, path) => {
    const error = await caught(() => testing.drain(options));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ code: AwaErrorCodes.invalidOption, path });
  });
});
