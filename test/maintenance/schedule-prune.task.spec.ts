import { Injectable } from '@nestjs/common';
import { JobHandler } from 'nestjs-awa';
import { SchedulePruneTask } from '../../lib/maintenance/tasks/schedule-prune.task.js';
import { useQuietApp } from './quiet-app.js';

@Injectable()
class ReportHandlers {
  @JobHandler('report.tick')
  async tick(): Promise<void> {}
}

/** The leader's prune: the code schedules of handled kinds that no live instance declares any more. */
describe('SchedulePruneTask', () => {
  // The app handles report.tick and declares no schedule.
  const ctx = useQuietApp(
    {},
    {
      providers: [ReportHandlers],
      reset: async (sql) => {
        await sql('TRUNCATE awa.schedules');
        await sql(`DELETE FROM awa.instances WHERE hostname = 'seeded'`);
      },
    },
  );
  const { exec } = ctx;
  const task = ctx.task(SchedulePruneTask);

  const seedSchedule = (name: string, kind: string, source: string) =>
    exec(
      `INSERT INTO awa.schedules (name, kind, queue, cron, source, next_fire_at)
       VALUES ($1, $2, 'default', '0 0 1 1 *', $3, now() + interval '1 hour')`,
      [name, kind, source],
    );
  const names = async () => (await exec('SELECT name FROM awa.schedules ORDER BY name')).map((r) => r.name);

  it('removes undeclared code schedules, keeping runtime ones, those another live instance declares, and unhandled kinds', async () => {
    await seedSchedule('gone', 'report.tick', 'decorator');
    await seedSchedule('gone-too', 'report.tick', 'options');
    await seedSchedule('runtime', 'report.tick', 'runtime');
    await seedSchedule('theirs', 'report.tick', 'options');
    await seedSchedule('unhandled', 'nobody', 'decorator');
    await exec(
      `INSERT INTO awa.instances (id, hostname, pid, queues, lock_key, settings, started_at, heartbeat_at,
                                  handlers, schedules)
       VALUES ('other', 'seeded', 1, '{default}', 987654321, '{}', now(), now(), '{"report.tick": "default"}',
               '{theirs}')`,
    );

    expect(await task.run()).toBe(2);
    expect(await names()).toEqual(['runtime', 'theirs', 'unhandled']);
    expect(await task.run()).toBe(0);
  });
});
