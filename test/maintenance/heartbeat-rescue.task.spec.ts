import { RescueErrors } from 'nestjs-awa';
import { HEARTBEAT_RESCUE } from '../../lib/maintenance/tasks/rescue.task.js';
import { leasesOf, readJob } from '../sql/sql-fixture.js';
import { seedRunning } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';

const HOUR = 3_600_000;

describe('RescueTask as the heartbeat rescue (HEARTBEAT_RESCUE)', () => {
  const ctx = useQuietApp({
    rescueBatchSize: 3,
    queues: {
      default: { retryBaseDelay: 5_000, retryMaxDelay: 5_000 },
      reports: { retryBaseDelay: 120_000, retryMaxDelay: 120_000 },
    },
  });
  const { exec } = ctx;
  const task = ctx.task(HEARTBEAT_RESCUE.token);

  it("rescues leases whose heartbeat is older than heartbeatStaleAfter, with the queue's retry settings", async () => {
    const byDefault = await seedRunning(exec, { queue: 'default', heartbeatAgeMs: HOUR });
    const byReports = await seedRunning(exec, {
      queue: 'reports',
      heartbeatAgeMs: 31_000,
      deadlineInMs: HOUR,
      attempt: 2,
      maxAttempts: 5,
    });
    const byUnknown = await seedRunning(exec, { queue: 'legacy', heartbeatAgeMs: HOUR });
    const fresh = await seedRunning(exec, { heartbeatAgeMs: 0 });
    const recent = await seedRunning(exec, { heartbeatAgeMs: 10_000 });

    expect(await task.run()).toBe(3);

    const a = await readJob(exec, byDefault.id);
    expect(a).toMatchObject({
      state: 'retryable',
      attempt: 1,
      errors: [{ attempt: 1, error: RescueErrors.heartbeatStale }],
    });
    expect(a!.retry_delay_ms).toBeCloseTo(5_000, 3);
    const b = await readJob(exec, byReports.id);
    expect(b).toMatchObject({
      state: 'retryable',
      attempt: 2,
      errors: [{ attempt: 2, error: RescueErrors.heartbeatStale }],
    });
    expect(b!.retry_delay_ms).toBeCloseTo(120_000, 3);
    // A queue this app does not configure gets the library's default backoff: 1 s + up to 25%.
    const c = await readJob(exec, byUnknown.id);
    expect(c).toMatchObject({ state: 'retryable', errors: [{ error: RescueErrors.heartbeatStale }] });
    expect(c!.retry_delay_ms).toBeGreaterThanOrEqual(1_000);
    expect(c!.retry_delay_ms).toBeLessThanOrEqual(1_250);
    for (const job of [byDefault, byReports, byUnknown]) expect(await leasesOf(exec, job.id)).toEqual([]);

    for (const job of [fresh, recent]) {
      expect(await readJob(exec, job.id)).toMatchObject({ state: 'running', errors: [] });
      expect(await leasesOf(exec, job.id)).toEqual(['1@instance-a']);
    }
    expect(await task.run()).toBe(0);
  });

  it('fails a job whose attempts are spent', async () => {
    const job = await seedRunning(exec, { heartbeatAgeMs: HOUR, attempt: 4, maxAttempts: 4 });
    expect(await task.run()).toBe(1);
    const row = await readJob(exec, job.id);
    expect(row).toMatchObject({ state: 'failed', errors: [{ attempt: 4, error: RescueErrors.heartbeatStale }] });
    expect(row!.finalized_at).toBeInstanceOf(Date);
  });

  it('moves at most rescueBatchSize leases per run, oldest heartbeat first', async () => {
    const jobs = [];
    for (const hours of [2, 5, 1, 4, 3])
      jobs.push({ hours, ...(await seedRunning(exec, { heartbeatAgeMs: hours * HOUR })) });
    expect(await task.run()).toBe(3);
    const rescued = await exec(`SELECT id::text FROM awa.all_jobs WHERE state = 'retryable' ORDER BY all_jobs.id`);
    expect(rescued.map((r) => r.id)).toEqual(jobs.filter((j) => j.hours >= 3).map((j) => j.id));
    expect(await task.run()).toBe(2);
    expect(await task.run()).toBe(0);
  });

  it("leaves a fresh lease alone even past its deadline: that one is the deadline rescue's", async () => {
    const { id } = await seedRunning(exec, { instanceId: 'any-instance', heartbeatAgeMs: 1_000, deadlineInMs: -1_000 });
    expect(await task.run()).toBe(0);
    expect(await readJob(exec, id)).toMatchObject({ state: 'running' });
  });
});
