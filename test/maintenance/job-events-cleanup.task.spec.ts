import { JobEventsCleanupTask } from '../../lib/maintenance/tasks/job-events-cleanup.task.js';
import type { Exec } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';

const HOUR = 3_600_000;

/** Seeds an event `ageMs` old (its own transaction, so its tx orders it after the earlier ones). */
const seedEvent = async (exec: Exec, ageMs: number) =>
  (
    await exec(
      `INSERT INTO awa.job_events (job_id, event, kind, queue, state, attempt, at)
       VALUES (1, 'completed', 'k', 'default', 'completed', 1, now() - $1::float8 * interval '1 millisecond')
       RETURNING tx::text, id::text`,
      [ageMs],
    )
  )[0] as { tx: string; id: string };

describe('JobEventsCleanupTask', () => {
  // rescueBatchSize 1: a batch of 10 events; retention 1 hour.
  const ctx = useQuietApp(
    { rescueBatchSize: 1, jobEvents: { retention: HOUR } },
    {
      reset: (exec) =>
        exec('TRUNCATE awa.job_events, awa.event_subscriptions, awa.event_group_positions RESTART IDENTITY'),
    },
  );
  const { exec } = ctx;
  const task = () => ctx.task(JobEventsCleanupTask);
  const remaining = async () => (await exec('SELECT count(*)::int AS n FROM awa.job_events'))[0].n as number;

  it('deletes events past the retention, at most 10 × rescueBatchSize per run, when no group exists', async () => {
    for (let i = 0; i < 12; i++) await seedEvent(exec, 2 * HOUR);
    await seedEvent(exec, 60_000);
    expect(await task().run()).toBe(10);
    expect(await task().run()).toBe(2);
    expect(await task().run()).toBe(0);
    expect(await remaining()).toBe(1);
  });

  it('keeps old events a group has not passed yet', async () => {
    const first = await seedEvent(exec, 2 * HOUR);
    await seedEvent(exec, 2 * HOUR);
    await exec(`INSERT INTO awa.event_group_positions ("group", position_tx, position_id) VALUES ('slow', $1, $2)`, [
      first.tx,
      first.id,
    ]);
    expect(await task().run()).toBe(1);
    expect(await remaining()).toBe(1);
  });
});

describe('JobEventsCleanupTask with retention 0', () => {
  const ctx = useQuietApp({ jobEvents: { retention: 0 } });

  it('keeps every event', async () => {
    await seedEvent(ctx.exec, 100 * HOUR);
    expect(await ctx.task(JobEventsCleanupTask).run()).toBe(0);
    expect(await ctx.exec('SELECT count(*)::int AS n FROM awa.job_events')).toEqual([{ n: 1 }]);
  });
});
