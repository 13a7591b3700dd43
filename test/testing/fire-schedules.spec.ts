import { Injectable } from '@nestjs/common';
import { AwaOptionError, JobHandler, JobSchedules, Periodic, type Job } from 'nestjs-awa';
import { AwaTesting } from 'nestjs-awa/testing';
import { DataSource } from 'typeorm';
import { caught } from '../support/caught.js';
import { useManualApp } from './testing-app.js';

@Injectable()
class Reports {
  readonly log: string[] = [];

  @JobHandler('report.nightly')
  @Periodic('0 3 * * *', { args: { scope: 'all' } })
  nightly(job: Job<{ scope: string }>) {
    this.log.push(`nightly ${job.args.scope}`);
  }

  @JobHandler('tenant.sync', { queue: 'keyed' })
  sync() {
    this.log.push('sync');
  }
}

/**
 * With `testing: true` no leader ticks the schedules: a test fires them with
 * AwaTesting.fireSchedules (as of now, or of a given time), then drains the jobs they enqueued.
 */
describe('AwaTesting.fireSchedules', () => {
  const block = useManualApp([Reports], {
    queues: { default: {}, keyed: { keyConcurrency: 1 } },
    schedules: [{ name: 'sync.nightly', cron: '0 3 * * *', kind: 'tenant.sync', concurrencyKey: 'acme' }],
  });
  let testing: AwaTesting;
  let reports: Reports;

  beforeAll(() => {
    testing = block.app.get(AwaTesting);
    reports = block.app.get(Reports);
  });

  it('fires nothing before a schedule is due', async () => {
    expect(await testing.fireSchedules()).toEqual([]);
    expect((await testing.drain()).jobs).toEqual([]);
  });

  it('fires the schedules due at the given time once each, and drain runs their jobs', async () => {
    const schedules = block.app.get(JobSchedules);
    const nightly = (await schedules.getSchedule('report.nightly'))!;
    const at = nightly.nextFireAt!;

    const fired = await testing.fireSchedules({ at });
    expect(fired.sort((a, b) => a.schedule.localeCompare(b.schedule))).toEqual([
      { schedule: 'report.nightly', kind: 'report.nightly', queue: 'default', fireAt: at, jobId: expect.any(String) },
      { schedule: 'sync.nightly', kind: 'tenant.sync', queue: 'keyed', fireAt: at, jobId: expect.any(String) },
    ]);
    expect(await testing.expectEnqueued('report.nightly', { scope: 'all' })).toHaveLength(1);
    const ds = block.app.get(DataSource);
    expect(await ds.query(`SELECT concurrency_key FROM awa.all_jobs WHERE kind = 'tenant.sync'`)).toEqual([
      { concurrency_key: 'acme' },
    ]);

    expect(await testing.drain()).toMatchObject({ completed: 2, failed: 0 });
    expect(reports.log.sort()).toEqual(['nightly all', 'sync']);
    expect((await schedules.getSchedule('report.nightly'))!.nextFireAt!.getTime()).toBe(at.getTime() + 86_400_000);

    // The same time again: each fire is enqueued once.
    expect(await testing.fireSchedules({ at })).toEqual([]);
  });

  it('refuses a time that is not a Date', async () => {
    const error = await caught(() => testing.fireSchedules({ at: 'tomorrow' as never }));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ path: 'at' });
    expect(await caught(() => testing.fireSchedules({ when: new Date() } as never))).toMatchObject({ path: 'when' });
  });
});
