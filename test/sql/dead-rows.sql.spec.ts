import { statisticsSql } from '../../lib/sql/index.js';
import { HOT_TABLES } from '../../lib/sql/statistics.sql.js';
import { leaseChurn } from '../support/lease-churn.js';
import { asRoleOwningNothing, useSqlFixture } from './sql-fixture.js';

/** The dead rows of the hot tables, and their VACUUM (HotTableVacuumTask). */
describe('statistics.sql: dead rows and vacuum', () => {
  const f = useSqlFixture({ reset: false });
  const churn = leaseChurn(() => f.url);
  beforeAll(async () => {
    await f.sql(`ALTER TABLE awa.active_leases SET (${churn.autovacuumAway})`);
  });
  beforeEach(async () => {
    await churn.vacuumed();
  });

  const leases = async () =>
    (await f.run(statisticsSql.readDeadRows, [HOT_TABLES])).find((row) => row.table_name === 'active_leases');

  it('reads the live and dead rows of each hot table, as the statistics collector counts them', async () => {
    await churn.leave(300, 2_000);
    expect(await leases()).toEqual({
      table_name: 'active_leases',
      live_rows: 300,
      dead_rows: 2_000,
      vacuums: await churn.vacuumCount(), // none by autovacuum (autovacuumAway)
    });
    const tables = (await f.run(statisticsSql.readDeadRows, [HOT_TABLES])).map((row) => row.table_name);
    expect(tables).toEqual(['active_leases', 'job_dependencies', 'jobs']);
  });

  it('vacuums each hot table by name, down to no dead rows', async () => {
    await churn.leave(300, 2_000);
    const { vacuums } = (await leases())!;
    for (const table of HOT_TABLES) await f.run(statisticsSql.vacuumTable[table]);
    expect(await leases()).toEqual({ table_name: 'active_leases', live_rows: 300, dead_rows: 0, vacuums: vacuums + 1 });
  });

  it('leaves out a table whose autovacuum its owner turned off', async () => {
    await f.sql('ALTER TABLE awa.active_leases SET (autovacuum_enabled = off)');
    try {
      expect(await leases()).toBeUndefined();
    } finally {
      await f.sql('ALTER TABLE awa.active_leases RESET (autovacuum_enabled)');
    }
    expect(await leases()).toBeDefined();
  });

  it('leaves out the tables this role may not vacuum (it does not own them)', async () => {
    expect(await leases()).toBeDefined();
    await asRoleOwningNothing(f, async (client) => {
      expect(await f.run(statisticsSql.readDeadRows, [HOT_TABLES], client)).toEqual([]);
    });
  });

  it('gives way to a vacuum already at work on the table, without waiting for it', async () => {
    await churn.leave(0, 2_000);
    const holder = await f.client();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE awa.active_leases IN SHARE UPDATE EXCLUSIVE MODE'); // what VACUUM takes
    try {
      await f.run(statisticsSql.vacuumTable.active_leases);
      expect(await leases()).toMatchObject({ dead_rows: 2_000 });
    } finally {
      await holder.query('COMMIT');
    }
  });
});
