import { Injectable } from '@nestjs/common';
import {
  AwaErrorCodes,
  AwaOptionError,
  JobHandler,
  JobSchedules,
  MaintenanceService,
  Periodic,
  QueueProducer,
  ScheduleNotFoundError,
  type Job,
} from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { caught } from '../support/caught.js';
import { useAppPerTest } from '../support/block-app.js';
import { waitFor } from '../support/test-app.js';

const runs: Array<{ kind: string; args: unknown }> = [];

@Injectable()
class ReportHandlers {
  @JobHandler('report.tick')
  @Periodic('* * * * * *', { args: { from: 'decorator' } })
  tick(job: Job) {
    runs.push({ kind: job.kind, args: job.args });
  }

  @JobHandler('report.nightly')
  nightly() {}
}

/** Fire times of a schedule's jobs, in ms, sorted. */
async function fireTimes(ds: DataSource, name: string): Promise<number[]> {
  const prefix = `awa:schedule:${name}:`;
  const rows = (await ds.query(`SELECT unique_key FROM awa.all_jobs WHERE unique_key LIKE $1 ORDER BY 1`, [
    `${prefix}%`,
  ])) as Array<{ unique_key: string }>;
  return rows.map((r) => Date.parse(r.unique_key.slice(prefix.length)));
}

const contiguous = (times: number[], step: number) => times.every((t, i) => i === 0 || t - times[i - 1]! === step);

async function databaseNow(ds: DataSource): Promise<number> {
  const [{ now }] = (await ds.query('SELECT now() AS now')) as [{ now: Date }];
  return now.getTime();
}

describe('JobSchedules and declared schedules', () => {
  const apps = useAppPerTest();
  const boot = () =>
    apps.start({
      providers: [ReportHandlers],
      awa: {
        scheduleInterval: 200,
        schedules: [{ name: 'nightly', cron: '0 3 * * *', kind: 'report.nightly', timeZone: 'Europe/Berlin' }],
      },
    });

  it('stores @Periodic and option schedules at boot and runs the decorated handler on each fire', async () => {
    const app = await boot();
    const schedules = app.get(JobSchedules);
    expect(await schedules.listSchedules()).toEqual([
      expect.objectContaining({ name: 'nightly', source: 'options', timeZone: 'Europe/Berlin', missed: 'once' }),
      expect.objectContaining({
        name: 'report.tick',
        kind: 'report.tick',
        queue: 'default',
        source: 'decorator',
        args: { from: 'decorator' },
        paused: false,
      }),
    ]);
    await waitFor(() => runs.length >= 2, 20_000, 'two runs of the periodic handler');
    expect(runs[0]).toEqual({ kind: 'report.tick', args: { from: 'decorator' } });
    const job = await app
      .get(QueueProducer)
      .getJob(
        (
          (await app.get(DataSource).query(`SELECT id::text FROM awa.all_jobs WHERE kind = 'report.tick' LIMIT 1`)) as [
            { id: string },
          ]
        )[0].id,
      );
    expect(job).toMatchObject({
      tags: ['awa:schedule:report.tick'],
      uniqueKey: expect.stringMatching(/^awa:schedule:report\.tick:/),
    });
  });

  it('neither loses nor repeats a fire across a restart, and prunes code schedules no longer declared', async () => {
    const first = await boot();
    const ds = first.get(DataSource);
    await waitFor(async () => (await fireTimes(ds, 'report.tick')).length >= 2, 20_000, 'fires before the restart');
    await ds.query(
      `INSERT INTO awa.schedules (name, kind, queue, cron, source, next_fire_at)
       VALUES ('stale', 'report.tick', 'default', '0 * * * *', 'decorator', now()),
              ('elsewhere', 'other.kind', 'default', '0 * * * *', 'decorator', now() + interval '1 day')`,
    );
    await first.close();
    const outside = new DataSource({ type: 'postgres', url: apps.db.url });
    await outside.initialize();
    try {
      const downAt = await databaseNow(outside);
      await waitFor(async () => (await databaseNow(outside)) > downAt + 2_500, 10_000, 'fires to fall in the downtime');
      const app = await boot();
      const names = (await app.get(JobSchedules).listSchedules()).map((s) => s.name);
      expect(names).toEqual(['elsewhere', 'nightly', 'report.tick']);
      const restartedAt = await databaseNow(outside);
      await waitFor(
        async () => (await fireTimes(outside, 'report.tick')).some((t) => t > restartedAt + 1_000),
        20_000,
        'fires after the restart',
      );
      const times = await fireTimes(outside, 'report.tick');
      expect(contiguous(times, 1_000)).toBe(true);
      expect(times.filter((t) => t > downAt && t < restartedAt).length).toBeGreaterThanOrEqual(2);
    } finally {
      await outside.destroy();
    }
  });

  it('creates, pauses, resumes, triggers and removes a runtime schedule', async () => {
    const app = await boot();
    const ds = app.get(DataSource);
    const schedules = app.get(JobSchedules);
    const created = await schedules.upsertSchedule({
      name: 'runtime.every2',
      cron: '*/2 * * * * *',
      kind: 'report.nightly',
      args: { n: 1 },
      missed: 'skip',
    });
    expect(created).toMatchObject({
      source: 'runtime',
      missed: 'skip',
      paused: false,
      lastFireAt: null,
      cron: '*/2 * * * * *',
    });
    expect(created.nextFireAt!.getTime() % 2_000).toBe(0);
    await waitFor(async () => (await fireTimes(ds, 'runtime.every2')).length >= 2, 20_000, 'runtime fires');

    await schedules.pauseSchedule('runtime.every2');
    const pausedAt = await databaseNow(ds);
    const atPause = await fireTimes(ds, 'runtime.every2');
    await waitFor(async () => (await databaseNow(ds)) > pausedAt + 2_500, 10_000, 'a fire time during the pause');
    await app.get(MaintenanceService).enqueueSchedules();
    expect(await fireTimes(ds, 'runtime.every2')).toEqual(atPause);
    expect((await schedules.getSchedule('runtime.every2'))!.paused).toBe(true);

    const { id } = await schedules.triggerSchedule('runtime.every2');
    expect(await app.get(QueueProducer).getJob(id)).toMatchObject({
      kind: 'report.nightly',
      args: { n: 1 },
      uniqueKey: null,
      tags: ['awa:schedule:runtime.every2'],
    });

    await schedules.resumeSchedule('runtime.every2');
    const resumed = (await schedules.getSchedule('runtime.every2'))!;
    expect(resumed.paused).toBe(false);
    expect(resumed.nextFireAt!.getTime()).toBeGreaterThan(pausedAt + 2_500);
    await waitFor(
      async () => (await fireTimes(ds, 'runtime.every2')).length > atPause.length,
      20_000,
      'fires after resume',
    );
    const times = await fireTimes(ds, 'runtime.every2');
    // No fire was made up for the pause.
    expect(times.filter((t) => t > atPause.at(-1)! && t <= pausedAt + 2_500)).toEqual([]);

    // An upsert with the same timeline keeps the next fire; a new cron restarts it.
    const kept = await schedules.upsertSchedule({
      name: 'runtime.every2',
      cron: '*/2 * * * * *',
      kind: 'report.nightly',
      args: { n: 2 },
    });
    expect(kept.args).toEqual({ n: 2 });
    expect(await schedules.removeSchedule('runtime.every2')).toBe(true);
    expect(await schedules.removeSchedule('runtime.every2')).toBe(false);
    expect(await schedules.getSchedule('runtime.every2')).toBeNull();
  });

  it('refuses bad runtime definitions with a typed error, and unknown names with ScheduleNotFoundError', async () => {
    const app = await boot();
    const schedules = app.get(JobSchedules);
    const bad = await caught(() => schedules.upsertSchedule({ name: 'x', cron: 'nope', kind: 'k' }));
    expect(bad).toBeInstanceOf(AwaOptionError);
    expect(bad).toMatchObject({ path: 'schedule.cron' });
    expect(
      await caught(() => schedules.upsertSchedule({ name: 'x', cron: '* * * * *', kind: 'k', timeZone: 'X/Y' })),
    ).toMatchObject({
      path: 'schedule.timeZone',
    });
    for (const call of [
      () => schedules.pauseSchedule('missing'),
      () => schedules.resumeSchedule('missing'),
      () => schedules.triggerSchedule('missing'),
    ]) {
      const error = await caught(call);
      expect(error).toBeInstanceOf(ScheduleNotFoundError);
      expect(error).toMatchObject({ code: AwaErrorCodes.scheduleNotFound, scheduleName: 'missing' });
    }
  });
});
