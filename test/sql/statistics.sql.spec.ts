import type pg from 'pg';
import { statisticsSql } from '../../lib/sql/index.js';
import { HOT_TABLES } from '../../lib/sql/statistics.sql.js';
import { jobsStatistics } from '../support/jobs-statistics.js';
import { asRoleOwningNothing, useSqlFixture } from './sql-fixture.js';

/** The planner's picture of the hot tables: which ones it no longer describes, and their ANALYZE. */
describe('statistics.sql', () => {
  // Emptied with DELETE, not TRUNCATE: the collector's count then follows every change the tests wait for.
  const f = useSqlFixture({ reset: false });
  const { change, insertJobs, analyzedWhileEmpty } = jobsStatistics(() => f.url);
  beforeAll(async () => {
    // Only the test analyzes: autovacuum would refresh the statistics under it.
    for (const table of HOT_TABLES) await f.sql(`ALTER TABLE awa.${table} SET (autovacuum_enabled = false)`);
  });
  beforeEach(async () => {
    await change('DELETE FROM awa.jobs');
    await f.sql('DELETE FROM awa.active_leases');
  });

  const read = async (on?: pg.ClientBase) =>
    (await f.run(statisticsSql.readPlannerStatistics, [HOT_TABLES], on)).find((row) => row.table_name === 'jobs');

  it('reads a table analyzed while empty that now holds jobs as planned for none, and as it is once analyzed', async () => {
    await analyzedWhileEmpty();
    const { inserted_rows: before } = (await read())!;
    await insertJobs(5_000);
    expect(await read()).toEqual({
      table_name: 'jobs',
      planned_rows: 0,
      live_rows: 5_000,
      inserted_rows: before + 5_000,
    });
    await f.run(statisticsSql.analyzeTable.jobs);
    expect(await read()).toMatchObject({ planned_rows: 5_000, live_rows: 5_000 });
  });

  it('reads the other way too: planned for thousands, none left', async () => {
    await insertJobs(5_000);
    await f.sql('ANALYZE awa.jobs');
    await change('DELETE FROM awa.jobs');
    expect(await read()).toMatchObject({ planned_rows: 5_000, live_rows: 0 });
  });

  it('leaves out the tables this role may not analyze (it does not own them)', async () => {
    await analyzedWhileEmpty();
    expect(await read()).toBeDefined();
    await asRoleOwningNothing(f, async (client) => {
      expect(await f.run(statisticsSql.readPlannerStatistics, [HOT_TABLES], client)).toEqual([]);
    });
  });

  it('analyzes each hot table by name', async () => {
    await f.sql(`INSERT INTO awa.active_leases (job_id, run_lease, instance_id)
                 SELECT g, 1, 'i' FROM generate_series(1, 3000) g`);
    for (const table of HOT_TABLES) await f.run(statisticsSql.analyzeTable[table]);
    const analyzed = await f.sql(
      `SELECT relname, reltuples FROM pg_class
        WHERE relnamespace = 'awa'::regnamespace AND relname = ANY($1) ORDER BY relname`,
      [[...HOT_TABLES]],
    );
    expect(analyzed).toEqual([
      { relname: 'active_leases', reltuples: 3_000 },
      { relname: 'job_dependencies', reltuples: 0 },
      { relname: 'jobs', reltuples: 0 },
    ]);
  });
});
