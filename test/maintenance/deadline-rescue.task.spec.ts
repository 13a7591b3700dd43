import { RescueErrors } from 'nestjs-awa';
import { DEADLINE_RESCUE } from '../../lib/maintenance/tasks/rescue.task.js';
import { leasesOf, readJob } from '../sql/sql-fixture.js';
import { seedRunning } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';

const HOUR = 3_600_000;

describe('RescueTask as the deadline rescue (DEADLINE_RESCUE)', () => {
  const ctx = useQuietApp({
    rescueBatchSize: 2,
    queues: {
      default: { retryBaseDelay: 7_000, retryMaxDelay: 7_000 },
      slow: { retryBaseDelay: 600_000, retryMaxDelay: 600_000 },
    },
  });
  const { exec } = ctx;
  const task = ctx.task(DEADLINE_RESCUE.token);

  it("rescues leases past their hard deadline even while they heartbeat, with the queue's retry settings", async () => {
    const fast = await seedRunning(exec, { queue: 'default', deadlineInMs: -1, heartbeatAgeMs: 0 });
    const slow = await seedRunning(exec, { queue: 'slow', deadlineInMs: -HOUR, attempt: 3, maxAttempts: 10 });
    const notYet = await seedRunning(exec, { deadlineInMs: HOUR });
    const noDeadline = await seedRunning(exec, { deadlineInMs: null, heartbeatAgeMs: HOUR });

    expect(await task.run()).toBe(2);

    const a = await readJob(exec, fast.id);
    expect(a).toMatchObject({
      state: 'retryable',
      attempt: 1,
      errors: [{ attempt: 1, error: RescueErrors.deadlineExceeded }],
    });
    expect(a!.retry_delay_ms).toBeCloseTo(7_000, 3);
    const b = await readJob(exec, slow.id);
    expect(b).toMatchObject({
      state: 'retryable',
      attempt: 3,
      errors: [{ attempt: 3, error: RescueErrors.deadlineExceeded }],
    });
    expect(b!.retry_delay_ms).toBeCloseTo(600_000, 3);
    expect(await leasesOf(exec, fast.id)).toEqual([]);
    expect(await leasesOf(exec, slow.id)).toEqual([]);

    // A stale heartbeat without a deadline is the heartbeat rescue's business, not this task's.
    for (const job of [notYet, noDeadline]) {
      expect(await readJob(exec, job.id)).toMatchObject({ state: 'running', errors: [] });
      expect(await leasesOf(exec, job.id)).toEqual(['1@instance-a']);
    }
    expect(await task.run()).toBe(0);
  });

  it('fails a job whose attempts are spent', async () => {
    const job = await seedRunning(exec, { deadlineInMs: -1_000, attempt: 2, maxAttempts: 2 });
    expect(await task.run()).toBe(1);
    const row = await readJob(exec, job.id);
    expect(row).toMatchObject({ state: 'failed', errors: [{ attempt: 2, error: RescueErrors.deadlineExceeded }] });
    expect(row!.finalized_at).toBeInstanceOf(Date);
  });

  it('moves at most rescueBatchSize leases per run, earliest deadline first', async () => {
    const jobs = [];
    for (const minutes of [1, 30, 10, 20])
      jobs.push({ minutes, ...(await seedRunning(exec, { deadlineInMs: -minutes * 60_000 })) });
    expect(await task.run()).toBe(2);
    const rescued = await exec(`SELECT id::text FROM awa.all_jobs WHERE state = 'retryable' ORDER BY all_jobs.id`);
    expect(rescued.map((r) => r.id)).toEqual(jobs.filter((j) => j.minutes >= 20).map((j) => j.id));
    expect(await task.run()).toBe(2);
    expect(await task.run()).toBe(0);
  });
});
