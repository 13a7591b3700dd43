import pg from 'pg';
import { PromotionTask } from '../../lib/maintenance/tasks/promotion.task.js';
import { listen, readJob } from '../sql/sql-fixture.js';
import { seedJob, seedRunning } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';

const HOUR = 3_600_000;

describe('PromotionTask', () => {
  // The app has no handlers, so nothing is claimed.
  const ctx = useQuietApp({ rescueBatchSize: 3 });
  const { exec } = ctx;
  const task = ctx.task(PromotionTask);
  let listener: pg.Client;
  beforeAll(async () => {
    listener = new pg.Client({ connectionString: ctx.url });
    ctx.onClose(() => listener.end());
    await listener.connect();
  });

  it('makes due scheduled and retryable jobs available and wakes their queues, once each', async () => {
    const notes = await listen(listener, 'awa_jobs');
    const due = [
      await seedJob(exec, { state: 'scheduled', queue: 'mail', runAtMs: -HOUR }),
      await seedJob(exec, { state: 'retryable', queue: 'mail', runAtMs: -1, attempt: 1, runLease: 1 }),
      await seedJob(exec, { state: 'scheduled', queue: 'reports', runAtMs: -60_000 }),
    ];
    const later = await seedJob(exec, { state: 'scheduled', queue: 'other', runAtMs: HOUR });
    const running = await seedRunning(exec, { runAtMs: -HOUR });
    await notes.take(exec); // nothing so far: none of the seeds was inserted available

    expect(await task.run()).toBe(3);
    expect((await notes.take(exec)).sort()).toEqual(['mail', 'reports']);
    for (const id of due) expect(await readJob(exec, id)).toMatchObject({ state: 'available' });
    expect(await readJob(exec, later)).toMatchObject({ state: 'scheduled' });
    expect(await readJob(exec, running.id)).toMatchObject({ state: 'running' });

    expect(await task.run()).toBe(0);
    expect(await notes.take(exec)).toEqual([]);
  });

  it('promotes at most rescueBatchSize jobs per run, earliest run_at first', async () => {
    const jobs = [];
    for (const minutes of [5, 1, 4, 2, 3])
      jobs.push({
        minutes,
        id: await seedJob(exec, { state: 'retryable', attempt: 1, runLease: 1, runAtMs: -minutes * 60_000 }),
      });
    expect(await task.run()).toBe(3);
    const promoted = await exec(`SELECT id::text FROM awa.all_jobs WHERE state = 'available' ORDER BY all_jobs.id`);
    expect(promoted.map((r) => r.id)).toEqual(jobs.filter((j) => j.minutes >= 3).map((j) => j.id));
    expect(await task.run()).toBe(2);
    expect(await task.run()).toBe(0);
  });
});
