import { jest } from '@jest/globals';
import { Logger } from '@nestjs/common';
import { MaintenanceService } from 'nestjs-awa';
import pg from 'pg';
import { isStale, PlannerStatisticsTask } from '../../lib/maintenance/tasks/planner-statistics.task.js';
import { jobsStatistics } from '../support/jobs-statistics.js';
import { useQuietApp } from './quiet-app.js';

/**
 * A VACUUM or ANALYZE while the backlog was empty leaves awa.jobs planned as one row however many jobs
 * arrive; the leader's orphan sweep analyzes it again as soon as the collector's count says otherwise.
 */
describe('the leader keeps the planner statistics of the hot tables near their size', () => {
  const stats = jobsStatistics(() => ctx.url);
  const ctx = useQuietApp(
    {},
    {
      truncate: false,
      reset: async (exec) => {
        await exec('DELETE FROM awa.active_leases');
        await stats.change('DELETE FROM awa.jobs');
      },
    },
  );
  const service = () => ctx.app.get(MaintenanceService);
  const task = () => ctx.app.get(PlannerStatisticsTask);
  const messages: { level: string; text: string }[] = [];
  const spies: jest.SpiedFunction<(message: unknown) => void>[] = [];
  beforeAll(async () => {
    await ctx.exec(`ALTER TABLE awa.jobs SET (autovacuum_enabled = false)`); // only the test's ANALYZEs
  });
  beforeEach(() => {
    messages.length = 0;
    for (const level of ['log', 'warn'] as const)
      spies.push(
        jest.spyOn(Logger.prototype, level).mockImplementation((message: unknown) => {
          messages.push({ level, text: String(message) });
        }),
      );
  });
  afterEach(() => spies.splice(0).forEach((spy) => spy.mockRestore()));
  const reltuples = async () =>
    Number((await ctx.exec(`SELECT reltuples FROM pg_class WHERE oid = 'awa.jobs'::regclass`))[0]?.reltuples);
  const statisticsLines = () => messages.filter((m) => m.text.startsWith('planner statistics'));

  it('the orphan sweep analyzes awa.jobs once the table stays off its statistics, and names what it found', async () => {
    await service().sweepOrphans(); // a first look: the table's rate is known from the second on
    await stats.analyzedWhileEmpty();
    await stats.insertJobs(20_000);
    expect(await reltuples()).toBe(0);
    // The second look may take 20,000 rows inserted since the first for the collector's lag; the third
    // sees no insert since the second.
    await service().sweepOrphans();
    await service().sweepOrphans();
    expect(await reltuples()).toBe(20_000);
    expect(statisticsLines()).toEqual([
      { level: 'log', text: 'planner statistics: analyzed awa.jobs (planned for 0 row(s), 20000 live)' },
    ]);
    await service().sweepOrphans();
    expect(statisticsLines()).toHaveLength(1);
  });

  it('gives way to a session that holds the table (an autovacuum), without a warning, and analyzes at the next sweep', async () => {
    await stats.analyzedWhileEmpty();
    await stats.insertJobs(5_000);
    await task().find(); // a look since the inserts
    const holder = new pg.Client({ connectionString: ctx.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE awa.jobs IN SHARE UPDATE EXCLUSIVE MODE'); // what VACUUM and ANALYZE take
      expect(await task().run()).toBe(0);
      await service().sweepOrphans();
      expect(messages).toEqual([]);
      expect(await reltuples()).toBe(0);
      await holder.query('COMMIT');
    } finally {
      await holder.end();
    }
    expect(await task().run()).toBe(1);
    expect(await reltuples()).toBe(5_000);
  });
});

describe('isStale', () => {
  const row = (planned: number, live: number) =>
    ({ table_name: 'jobs', planned_rows: planned, live_rows: live, inserted_rows: 0 }) as const;
  it('needs the counts apart by the given rows and by a factor of 4, either way', () => {
    expect(isStale(row(0, 1_000), 1_000)).toBe(true);
    expect(isStale(row(0, 999), 1_000)).toBe(false);
    expect(isStale(row(20_000, 0), 1_000)).toBe(true);
    expect(isStale(row(2_000, 5_000), 1_000)).toBe(false); // 2.5 times
    expect(isStale(row(2_000, 8_000), 1_000)).toBe(true);
    // At 15,000 jobs/s the live count was off by up to 30,000 rows at any moment: 3 s of inserts is 45,000.
    expect(isStale(row(500, 14_000), 45_000)).toBe(false);
    expect(isStale(row(500, 60_000), 45_000)).toBe(true);
  });
});
