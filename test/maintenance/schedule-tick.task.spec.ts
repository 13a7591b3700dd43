import { SCHEDULE_TICK_BATCH, ScheduleTickTask } from '../../lib/maintenance/tasks/schedule-tick.task.js';
import { useQuietApp } from './quiet-app.js';

/** The leader's schedule tick: the due fires of periodic jobs, at most SCHEDULE_TICK_BATCH schedules per run. */
describe('ScheduleTickTask', () => {
  // The app has no handlers, so nothing claims the fires' jobs.
  const ctx = useQuietApp(
    { queues: { reports: { maxAttempts: 7 } } },
    { reset: (sql) => sql('TRUNCATE awa.schedules') },
  );
  const { exec } = ctx;
  const task = ctx.task(ScheduleTickTask);

  /** `count` yearly schedules in `queue`, each due 10 s ago (a fire late, not missed: it is enqueued). */
  const seedDue = (prefix: string, count: number, queue = 'reports') =>
    exec(
      `INSERT INTO awa.schedules (name, kind, queue, cron, source, next_fire_at)
       SELECT $1 || i, 'report.yearly', $2, '0 0 1 1 *', 'runtime', date_trunc('second', now()) - interval '10 seconds'
         FROM generate_series(1, $3::int) AS i`,
      [prefix, queue, count],
    );

  it("enqueues each due schedule's fire once, with its queue's maxAttempts, and moves the schedule on", async () => {
    await seedDue('nightly-', 1);
    await seedDue('legacy-', 1, 'legacy');
    await exec(
      `INSERT INTO awa.schedules (name, kind, queue, cron, source, next_fire_at)
       VALUES ('later', 'report.yearly', 'reports', '0 0 1 1 *', 'runtime', now() + interval '1 hour')`,
    );

    expect(await task.run()).toBe(2);

    const jobs = await exec(`SELECT queue, max_attempts, unique_key, tags FROM awa.all_jobs ORDER BY queue`);
    expect(jobs).toEqual([
      {
        queue: 'legacy',
        max_attempts: 25, // a queue this app does not configure: the library's default
        unique_key: expect.stringMatching(/^awa:schedule:legacy-1:/),
        tags: ['awa:schedule:legacy-1'],
      },
      {
        queue: 'reports',
        max_attempts: 7,
        unique_key: expect.stringMatching(/^awa:schedule:nightly-1:/),
        tags: ['awa:schedule:nightly-1'],
      },
    ]);
    const moved = await exec(
      `SELECT name FROM awa.schedules WHERE last_fire_at IS NOT NULL AND next_fire_at > now() ORDER BY name`,
    );
    expect(moved.map((r) => r.name)).toEqual(['legacy-1', 'nightly-1']);

    expect(await task.run()).toBe(0);
    expect(await exec('SELECT id FROM awa.all_jobs')).toHaveLength(2);
  });

  it('takes at most SCHEDULE_TICK_BATCH schedules per run', async () => {
    await seedDue('s-', SCHEDULE_TICK_BATCH + 3);
    expect(await task.run()).toBe(SCHEDULE_TICK_BATCH);
    expect(await task.run()).toBe(3);
    expect(await task.run()).toBe(0);
    expect(await exec('SELECT id FROM awa.all_jobs')).toHaveLength(SCHEDULE_TICK_BATCH + 3);
  });
});
