import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  AwaErrorCodes,
  JobHandler,
  JobSnoozedError,
  JobValueError,
  MAX_SNOOZE_MS,
  QueueProducer,
  RescueErrors,
  type Job,
  type JobRecord,
} from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { JobValueMessages } from '../../lib/awa.messages.js';
import { DEADLINE_RESCUE, type RescueTask } from '../../lib/maintenance/tasks/rescue.task.js';
import { caughtSync } from '../support/caught.js';
import { useTestApp } from '../support/block-app.js';
import { waitFor } from '../support/test-app.js';
import { watchResultWrites } from './result-writes.js';

const HOUR = 3_600_000;

@Injectable()
class Snoozers {
  /** The attempt number each call of a job's handler saw, by job id. */
  attempts = new Map<string, number[]>();

  private seen(job: Job): number {
    const calls = this.attempts.get(job.id) ?? [];
    calls.push(job.attempt);
    this.attempts.set(job.id, calls);
    return calls.length;
  }

  @JobHandler('snooze.returned')
  returned(job: Job) {
    this.seen(job);
    return job.snooze(HOUR);
  }

  @JobHandler('snooze.thrown')
  thrown(job: Job) {
    this.seen(job);
    throw new JobSnoozedError(HOUR);
  }

  /** Snoozes twice (1 ms), then fails: the failure must retry with the backoff of attempt 1. */
  @JobHandler('snooze.then.fails', { queue: 'slow-retry' })
  async thenFails(job: Job) {
    if (this.seen(job) <= 2) return job.snooze(1);
    throw new Error('boom after two snoozes');
  }

  /** Snoozes twice, then completes. */
  @JobHandler('snooze.then.completes')
  thenCompletes(job: Job) {
    return this.seen(job) <= 2 ? job.snooze(1) : 'done';
  }

  @JobHandler('snooze.forever', { queue: 'capped' })
  forever(job: Job) {
    this.seen(job);
    return job.snooze(1);
  }

  gates = new Map<string, () => void>();

  /** Attempt 1 snoozes only once the test let it (after its lease was rescued); attempt 2 completes. */
  @JobHandler('snooze.late')
  async late(job: Job) {
    this.seen(job);
    if (job.attempt > 1) return 'attempt 2';
    await new Promise<void>((resolve) => this.gates.set(job.id, resolve));
    return job.snooze(HOUR);
  }

  @JobHandler('snooze.invalid')
  invalid(job: Job<{ ms: string }>) {
    return job.snooze(Number(job.args.ms));
  }
}

/** A handler returns job.snooze(ms) or throws JobSnoozedError(ms): back to scheduled, no attempt spent. */
describe('snooze', () => {
  const block = useTestApp({
    providers: [Snoozers],
    awa: {
      queues: {
        default: { pollInterval: 100, retryBaseDelay: 20, retryMaxDelay: 100 },
        'slow-retry': { pollInterval: 100, retryBaseDelay: HOUR, retryMaxDelay: 100 * HOUR, maxAttempts: 5 },
        capped: { pollInterval: 100, maxSnoozes: 2 },
      },
    },
  });
  let app: TestingModule;
  let producer: QueueProducer;
  let snoozers: Snoozers;

  beforeAll(() => {
    app = block.app;
    producer = app.get(QueueProducer);
    snoozers = app.get(Snoozers);
  });

  const inState = (id: string, state: string) =>
    waitFor(
      async () => {
        const job = await producer.getJob(id);
        return job?.state === state ? job : null;
      },
      20_000,
      `job ${id} to be ${state}`,
    );
  /** run_at - now() on the database clock, in ms. */
  const dueInMs = async (id: string) =>
    Number(
      (
        await app
          .get(DataSource)
          .query(`SELECT extract(epoch FROM run_at - now()) * 1000 AS ms FROM awa.all_jobs WHERE id = $1`, [id])
      )[0].ms,
    );

  it.each(['snooze.returned', 'snooze.thrown'])(
    '%s: the job goes back to scheduled, due later, spending no attempt and storing no output',
    async (kind) => {
      const { id } = await producer.enqueue(kind, {});
      const job = await inState(id, 'scheduled');
      expect(job).toMatchObject<Partial<JobRecord>>({
        attempt: 0,
        snoozes: 1,
        output: null,
        errors: [],
        finalizedAt: null,
      });
      expect(job.runLease).not.toBe('0'); // claimed once: the claim's lease stays on the row
      // Due about an hour from the snooze, on the database clock.
      expect(await dueInMs(id)).toBeGreaterThan(HOUR - 600_000);
      expect(await dueInMs(id)).toBeLessThanOrEqual(HOUR);
      expect(snoozers.attempts.get(id)).toEqual([1]);
    },
  );

  it('two snoozes then a failure: every run is attempt 1, and the retry waits the backoff of attempt 1', async () => {
    const { id } = await producer.enqueue('snooze.then.fails', {});
    const job = await inState(id, 'retryable');
    expect(snoozers.attempts.get(id)).toEqual([1, 1, 1]);
    expect(job).toMatchObject({
      attempt: 1,
      snoozes: 2,
      errors: [{ attempt: 1, error: 'Error: boom after two snoozes' }],
    });
    // retryBaseDelay * 2^(1-1), plus up to 25% jitter; a snooze counted as an attempt would make it 4 hours.
    const [{ delay }] = await app.get(DataSource).query(
      `SELECT extract(epoch FROM run_at - (errors -> -1 ->> 'at')::timestamptz) * 1000 AS delay
           FROM awa.all_jobs WHERE id = $1`,
      [id],
    );
    expect(Number(delay)).toBeGreaterThanOrEqual(HOUR);
    expect(Number(delay)).toBeLessThanOrEqual(1.25 * HOUR);
  });

  it('two snoozes then a completion: completed on attempt 1 with its output', async () => {
    const { id } = await producer.enqueue('snooze.then.completes', {});
    const job = await inState(id, 'completed');
    expect(snoozers.attempts.get(id)).toEqual([1, 1, 1]);
    expect(job).toMatchObject({ attempt: 1, snoozes: 2, output: 'done', errors: [] });
  });

  it('fails the job for good, with a clear entry, when it snoozes more than maxSnoozes times', async () => {
    const { id } = await producer.enqueue('snooze.forever', {});
    const job = await inState(id, 'failed');
    expect(snoozers.attempts.get(id)).toEqual([1, 1, 1]);
    expect(job).toMatchObject({
      attempt: 1,
      snoozes: 2,
      errors: [{ attempt: 1, error: JobValueMessages.snoozeCapReached(2) }],
    });
    expect(job.finalizedAt).toBeInstanceOf(Date);
  });

  it("is fenced: a rescued attempt's snooze changes nothing", async () => {
    const writes = watchResultWrites(app);
    try {
      const { id } = await producer.enqueue('snooze.late', {});
      await waitFor(() => snoozers.gates.get(id), 20_000, 'attempt 1 to run');
      // The maintenance leader rescues attempt 1 as past its deadline; attempt 2 completes the job.
      await app
        .get(DataSource)
        .query(`UPDATE awa.active_leases SET deadline_at = now() - interval '1 second' WHERE job_id = $1`, [id]);
      await app.get<RescueTask>(DEADLINE_RESCUE.token).run();
      await inState(id, 'completed');
      snoozers.gates.get(id)!();
      await waitFor(() => writes.held.has(`${id}:1`), 20_000, "attempt 1's snooze write");
      expect(await writes.held.get(`${id}:1`)).toBe(false);
      expect(snoozers.attempts.get(id)).toEqual([1, 2]);
      expect(await producer.getJob(id)).toMatchObject({
        state: 'completed',
        attempt: 2,
        snoozes: 0,
        output: 'attempt 2',
        errors: [{ attempt: 1, error: RescueErrors.deadlineExceeded }],
      });
    } finally {
      writes.restore();
    }
  });

  it.each([
    ['0', '0'],
    ['a negative delay', '-5'],
    ['NaN', 'NaN'],
    ['Infinity', 'Infinity'],
    ['more than a year', String(MAX_SNOOZE_MS + 1)],
  ])('refuses %s: the attempt fails with the JobValueError text', async (_what, ms) => {
    const { id } = await producer.enqueue('snooze.invalid', { ms }, { maxAttempts: 1 });
    const job = await inState(id, 'failed');
    expect(job.snoozes).toBe(0);
    expect(job.errors).toEqual([expect.objectContaining({ attempt: 1 })]);
    expect(job.errors[0]!.error).toContain('JobValueError: nestjs-awa: job.snooze(ms) needs a finite number');
  });

  it('refuses a bad delay in new JobSnoozedError(ms) too, with a typed error', () => {
    const error = caughtSync(() => new JobSnoozedError('soon' as never));
    expect(error).toBeInstanceOf(JobValueError);
    expect(error).toMatchObject({ code: AwaErrorCodes.invalidJobValue, field: 'snooze' });
    expect(new JobSnoozedError(250)).toMatchObject({ code: AwaErrorCodes.jobSnoozed, delayMs: 250 });
  });
});
