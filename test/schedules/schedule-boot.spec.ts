import { Injectable } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { AwaErrorCodes, AwaModule, AwaOptionError, JobHandler, Periodic, type AwaModuleOptions } from 'nestjs-awa';
import { ScheduleMessages } from '../../lib/awa.messages.js';
import {
  MAINTENANCE_INTERVAL_NAME,
  ORPHAN_SWEEP_INTERVAL_NAME,
  SCHEDULE_TICK_NAME,
} from '../../lib/maintenance/maintenance.service.js';
import { caught, caughtSync } from '../support/caught.js';
import { useAppPerTest } from '../support/block-app.js';

@Injectable()
class BadCronHandlers {
  @JobHandler('bad.cron')
  @Periodic('61 * * * *')
  run() {}
}

@Injectable()
class BadZoneHandlers {
  @JobHandler('bad.zone')
  @Periodic('0 3 * * *', { timeZone: 'Mars/Olympus' })
  run() {}
}

const ok = { name: 'ok', cron: '0 3 * * *', kind: 'k' };
const optionError = (options: AwaModuleOptions) => caughtSync(() => AwaModule.forRoot(options));

/** Bad schedules and timer options fail the boot with an AwaOptionError naming the option. */
describe('schedule and tick options at boot', () => {
  it.each<[string, AwaModuleOptions, string, string]>([
    [
      'a bad cron expression',
      { schedules: [ok, { ...ok, name: 'b' }, { ...ok, name: 'c', cron: 'every day' }] },
      'schedules[2].cron',
      'is not a cron expression',
    ],
    [
      'a cron expression with a field out of range',
      { schedules: [{ ...ok, cron: '0 25 * * *' }] },
      'schedules[0].cron',
      'out of range',
    ],
    [
      'a cron expression that never fires',
      { schedules: [{ ...ok, cron: '0 0 30 2 *' }] },
      'schedules[0].cron',
      'never fires',
    ],
    ['an unknown time zone', { schedules: [{ ...ok, timeZone: 'Europe/Berlni' }] }, 'schedules[0].timeZone', 'IANA'],
    ['a bad missed policy', { schedules: [{ ...ok, missed: 'twice' as never }] }, 'schedules[0].missed', "'skip'"],
    ['an unknown queue', { schedules: [{ ...ok, queue: 'nope' }] }, 'schedules[0].queue', 'nope'],
    ['a typo in a key', { schedules: [{ ...ok, timezone: 'UTC' } as never] }, 'schedules[0].timezone', 'timeZone'],
    ['a duplicate name', { schedules: [ok, ok] }, 'schedules[1].name', 'declared twice'],
    [
      'both forms of the maintenance tick',
      { maintenanceInterval: 1_000, maintenanceCron: '* * * * * *' },
      'maintenanceCron',
      'not both',
    ],
    [
      'both forms of the orphan sweep',
      { orphanSweepInterval: 1_000, orphanSweepCron: '* * * * * *' },
      'orphanSweepCron',
      'not both',
    ],
    [
      'both forms of the schedule tick',
      { scheduleInterval: 1_000, scheduleCron: '* * * * * *' },
      'scheduleCron',
      'not both',
    ],
    ['a bad tick cron', { maintenanceCron: '61 * * * * *' }, 'maintenanceCron', 'is not a cron expression'],
  ])('refuses %s', (_what, options, path, text) => {
    const error = optionError(options);
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ code: AwaErrorCodes.invalidOption, path });
    expect((error as AwaOptionError).message).toContain(path);
    expect((error as AwaOptionError).problem).toContain(text);
  });

  it('names both forms when a tick is given twice', () => {
    expect(optionError({ maintenanceInterval: 1_000, maintenanceCron: '* * * * * *' })).toMatchObject({
      problem: ScheduleMessages.bothTimerForms('maintenanceInterval', 'maintenanceCron'),
    });
  });

  describe('with a database', () => {
    const apps = useAppPerTest();

    it.each([
      [BadCronHandlers, '@Periodic(BadCronHandlers.run).cron'],
      [BadZoneHandlers, '@Periodic(BadZoneHandlers.run).timeZone'],
    ])('fails the boot on a bad @Periodic, naming the handler (%p)', async (provider, path) => {
      const error = await caught(() => apps.start({ providers: [provider] }));
      expect(error).toBeInstanceOf(AwaOptionError);
      expect(error).toMatchObject({ path });
    });

    it('registers the cron forms of the ticks as CronJobs in SchedulerRegistry', async () => {
      const app = await apps.start({
        awa: {
          maintenanceInterval: undefined,
          orphanSweepInterval: undefined,
          maintenanceCron: '*/30 * * * * *',
          orphanSweepCron: '*/5 * * * * *',
          scheduleCron: '* * * * * *',
        },
      });
      const registry = app.get(SchedulerRegistry);
      const jobs = registry.getCronJobs();
      for (const name of [MAINTENANCE_INTERVAL_NAME, ORPHAN_SWEEP_INTERVAL_NAME, SCHEDULE_TICK_NAME]) {
        expect(jobs.get(name)).toBeInstanceOf(CronJob);
        expect(jobs.get(name)!.isActive).toBe(true);
        expect(registry.getIntervals()).not.toContain(name);
      }
      expect(jobs.get(ORPHAN_SWEEP_INTERVAL_NAME)!.cronTime.source).toBe('*/5 * * * * *');
      await app.close();
      expect(registry.getCronJobs().size).toBe(0);
    });

    it('registers ms intervals when no cron is set', async () => {
      const app = await apps.start();
      const registry = app.get(SchedulerRegistry);
      expect(registry.getIntervals()).toEqual(
        expect.arrayContaining([MAINTENANCE_INTERVAL_NAME, ORPHAN_SWEEP_INTERVAL_NAME, SCHEDULE_TICK_NAME]),
      );
      expect(registry.getCronJobs().size).toBe(0);
    });
  });
});
