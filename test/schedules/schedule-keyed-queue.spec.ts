import { Injectable } from '@nestjs/common';
import { AwaErrorCodes, AwaOptionError, JobHandler, JobSchedules, Periodic, type AwaModuleOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { caught } from '../support/caught.js';
import { useAppPerTest } from '../support/block-app.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';

@Injectable()
class ReportHandlers {
  @JobHandler('report.build', { queue: 'reports' })
  build() {}

  @JobHandler('mail.digest')
  digest() {}
}

@Injectable()
class KeylessPeriodic {
  @JobHandler('report.periodic', { queue: 'reports' })
  @Periodic('* * * * * *')
  run() {}
}

@Injectable()
class KeyedPeriodic {
  @JobHandler('report.periodic', { queue: 'reports' })
  @Periodic('* * * * * *', { concurrencyKey: 'tenant-1' })
  run() {}
}

@Injectable()
class PlainHandlers {
  @JobHandler('plain.kind', { queue: 'plain' })
  run() {}
}

const QUEUES = { ...FAST_OPTIONS.queues, reports: { keyConcurrency: 2, pollInterval: 200 } };
const EVERY_SECOND = { name: 'reports.every-second', cron: '* * * * * *', kind: 'report.build' };

const completedKeys = async (ds: DataSource, kind: string) =>
  (
    (await ds.query(`SELECT concurrency_key FROM awa.all_jobs WHERE kind = $1 AND state = 'completed'`, [
      kind,
    ])) as Array<{
      concurrency_key: string | null;
    }>
  ).map((r) => r.concurrency_key);

/**
 * A schedule whose fires no claim could take (an unkeyed job in a queue with keyConcurrency, or a
 * job in a queue other than its handler's) is refused when it is declared, against the queue it
 * resolves to (its handler's), not the default queue.
 */
describe('schedules into a keyed queue', () => {
  const apps = useAppPerTest();
  const start = (awa: AwaModuleOptions, providers: unknown[] = [ReportHandlers]) =>
    apps.start({ providers: providers as never, awa: { scheduleInterval: 200, queues: QUEUES, ...awa } });

  it('refuses the boot for an options schedule without concurrencyKey whose handler is in a keyed queue', async () => {
    const error = await caught(() => start({ schedules: [EVERY_SECOND] }));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ code: AwaErrorCodes.invalidOption, path: 'schedules[0].concurrencyKey' });
    expect((error as AwaOptionError).problem).toContain('"reports.every-second"');
    expect((error as AwaOptionError).problem).toContain('"reports"');
  });

  it('refuses the boot for a @Periodic without concurrencyKey on a handler of a keyed queue', async () => {
    const error = await caught(() => start({}, [KeylessPeriodic]));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ path: '@Periodic(KeylessPeriodic.run).concurrencyKey' });
    expect((error as AwaOptionError).problem).toContain('"report.periodic"');
  });

  it('refuses the boot for a schedule into a queue other than the one its kind is handled in', async () => {
    const error = await caught(() =>
      start({ schedules: [{ ...EVERY_SECOND, kind: 'mail.digest', queue: 'reports', concurrencyKey: 'k' }] }),
    );
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ path: 'schedules[0].queue' });
    expect((error as AwaOptionError).problem).toContain('"default"');
  });

  it('refuses upsertSchedule without concurrencyKey for a kind handled in a keyed queue, storing nothing', async () => {
    const app = await start({});
    const schedules = app.get(JobSchedules);
    const error = await caught(() => schedules.upsertSchedule({ ...EVERY_SECOND, name: 'runtime.keyless' }));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ path: 'schedule.concurrencyKey' });
    expect(await schedules.getSchedule('runtime.keyless')).toBeNull();
  });

  it('boots a schedule of a handler in an unkeyed queue even when the default queue is keyed', async () => {
    const app = await start(
      {
        queues: { default: { keyConcurrency: 1 }, plain: {} },
        schedules: [{ name: 'plain', cron: '0 3 * * *', kind: 'plain.kind' }],
      },
      [PlainHandlers],
    );
    expect(await app.get(JobSchedules).getSchedule('plain')).toMatchObject({ queue: 'plain', concurrencyKey: null });
  });

  it('runs the fires of options, @Periodic and runtime schedules that carry a concurrencyKey', async () => {
    const app = await start({ schedules: [{ ...EVERY_SECOND, concurrencyKey: 'tenant-1' }] }, [
      ReportHandlers,
      KeyedPeriodic,
    ]);
    const schedules = app.get(JobSchedules);
    expect(await schedules.getSchedule('reports.every-second')).toMatchObject({
      queue: 'reports',
      concurrencyKey: 'tenant-1',
    });
    await schedules.upsertSchedule({
      name: 'runtime.keyed',
      cron: '* * * * * *',
      kind: 'report.build',
      concurrencyKey: 'tenant-2',
    });
    const ds = app.get(DataSource);
    await waitFor(
      async () =>
        (await completedKeys(ds, 'report.build')).filter((k) => k === 'tenant-1').length >= 2 &&
        (await completedKeys(ds, 'report.build')).filter((k) => k === 'tenant-2').length >= 2 &&
        (await completedKeys(ds, 'report.periodic')).length >= 2,
      20_000,
      'completed fires of each schedule',
    );
    expect(new Set(await completedKeys(ds, 'report.build'))).toEqual(new Set(['tenant-1', 'tenant-2']));
    expect(new Set(await completedKeys(ds, 'report.periodic'))).toEqual(new Set(['tenant-1']));
    const { id } = await schedules.triggerSchedule('reports.every-second');
    const [row] = (await ds.query(`SELECT concurrency_key FROM awa.all_jobs WHERE id = $1`, [id])) as [
      { concurrency_key: string },
    ];
    expect(row.concurrency_key).toBe('tenant-1');
  });
});
