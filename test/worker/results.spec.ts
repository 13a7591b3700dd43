import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AbortReasons, JobHandler, QueueProducer, RescueErrors, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { DEADLINE_RESCUE, type RescueTask } from '../../lib/maintenance/tasks/rescue.task.js';
import { useTestApp } from '../support/block-app.js';
import { finishedJob } from '../support/job-waits.js';
import { waitFor } from '../support/test-app.js';

@Injectable()
class Handlers {
  reasons = new Map<string, unknown>();
  /** The run lease of each attempt (`id:attempt`). */
  leases = new Map<string, string>();
  releaseFenced: (() => void) | undefined;

  @JobHandler('always.fails')
  fails() {
    throw new Error('boom');
  }

  @JobHandler('throws.odd')
  odd(job: Job<{ value: 'string' | 'undefined' | 'object' }>) {
    const values = { string: 'plain string', undefined, object: { code: 7 } };
    throw values[job.args.value];
  }

  @JobHandler('hangs', { queue: 'tight' })
  hangs(job: Job) {
    job.signal.addEventListener('abort', () => this.reasons.set(`${job.id}:${job.attempt}`, job.signal.reason));
    return new Promise(() => undefined);
  }

  /** Attempt 1 waits until its lease is rescued, then returns: the late completion must be fenced out. */
  @JobHandler('late')
  async late(job: Job) {
    this.leases.set(`${job.id}:${job.attempt}`, job.runLease);
    if (job.attempt > 1) return;
    await new Promise<void>((resolve) => {
      this.releaseFenced = resolve;
      job.signal.addEventListener('abort', () => {
        this.reasons.set(`${job.id}:${job.attempt}`, job.signal.reason);
        resolve();
      });
    });
  }
}

describe('handler results', () => {
  const block = useTestApp({
    providers: [Handlers],
    awa: {
      queues: {
        default: { pollInterval: 100, retryBaseDelay: 20, retryMaxDelay: 100 },
        tight: { deadlineDuration: 300, maxAttempts: 2, retryBaseDelay: 20, retryMaxDelay: 50, pollInterval: 100 },
      },
    },
  });
  let app: TestingModule;
  let producer: QueueProducer;
  let handlers: Handlers;

  beforeAll(() => {
    app = block.app;
    producer = app.get(QueueProducer);
    handlers = app.get(Handlers);
  });

  const final = (id: string) => finishedJob(producer, id);

  it('retries a throwing handler with backoff, then fails it with one error entry per attempt', async () => {
    const { id } = await producer.enqueue('always.fails', {}, { maxAttempts: 3 });
    const job = await final(id);
    expect(job.state).toBe('failed');
    expect(job.attempt).toBe(3);
    expect(job.finalizedAt).toBeInstanceOf(Date);
    expect(job.errors.map((e) => [e.attempt, e.error])).toEqual([
      [1, 'Error: boom'],
      [2, 'Error: boom'],
      [3, 'Error: boom'],
    ]);
    for (const e of job.errors) expect(Number.isNaN(Date.parse(e.at))).toBe(false);
  });

  it.each([
    ['string', 'plain string'],
    ['undefined', 'a handler threw undefined'],
    ['object', 'thrown value: {"code":7}'],
  ])('records a thrown %s as an error entry', async (value, text) => {
    const { id } = await producer.enqueue('throws.odd', { value }, { maxAttempts: 1 });
    const job = await final(id);
    expect(job.state).toBe('failed');
    expect(job.errors).toEqual([expect.objectContaining({ attempt: 1, error: text })]);
  });

  it('ends a hung handler at its hard deadline, aborts its signal, and fails it after maxAttempts', async () => {
    const { id } = await producer.enqueue('hangs', {});
    const job = await final(id);
    expect(job.state).toBe('failed');
    // On a loaded machine a prefetched claim may be given back unstarted first: that spends no attempt.
    const spent = job.errors.map((e) => e.error).filter((e) => e !== RescueErrors.releasedUnstarted);
    expect(spent).toEqual([RescueErrors.deadlineExceeded, RescueErrors.deadlineExceeded]);
    const aborted = [...handlers.reasons].filter(([attempt]) => attempt.startsWith(`${id}:`)).map(([, r]) => r);
    expect(aborted).toEqual([AbortReasons.deadline, AbortReasons.deadline]);
    const leases = await app.get(DataSource).query('SELECT 1 FROM awa.active_leases WHERE job_id = $1', [id]);
    expect(leases).toHaveLength(0);
  });

  it('discards a completion that arrives after the lease was rescued, and aborts the signal', async () => {
    const { id } = await producer.enqueue('late', {});
    const dataSource = app.get(DataSource);
    await waitFor(async () => (await producer.getJob(id))?.state === 'running');
    // Expire the deadline and let the rescue take the lease while the handler still runs.
    await dataSource.query(`UPDATE awa.active_leases SET deadline_at = now() - interval '1 second' WHERE job_id = $1`, [
      id,
    ]);
    // The app's own maintenance sweep may get there first; either way one rescue takes the lease (the
    // job's single deadline error below says so).
    await app.get<RescueTask>(DEADLINE_RESCUE.token).run();
    // The next heartbeat finds the lease gone and aborts attempt 1, which then returns.
    await waitFor(() => handlers.reasons.get(`${id}:1`), 10_000, 'the lease-lost abort');
    expect(handlers.reasons.get(`${id}:1`)).toBe(AbortReasons.leaseLost);
    const job = await final(id);
    // Attempt 1's late return changed nothing; attempt 2 completed it.
    expect(job.state).toBe('completed');
    expect(job.attempt).toBe(2);
    // A new lease for attempt 2: above attempt 1's, which its late return still held.
    expect(BigInt(job.runLease)).toBeGreaterThan(BigInt(handlers.leases.get(`${id}:1`)!));
    expect(job.errors).toEqual([expect.objectContaining({ attempt: 1, error: RescueErrors.deadlineExceeded })]);
  });
});
