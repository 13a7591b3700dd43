import { jest } from '@jest/globals';
import { MaintenanceService } from 'nestjs-awa';
import pg from 'pg';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { statisticsSql } from '../../lib/sql/index.js';
import {
  HotTableVacuumTask,
  isWorthVacuuming,
  VACUUM_MIN_DEAD_ROWS,
} from '../../lib/maintenance/tasks/hot-table-vacuum.task.js';
import { leaseChurn } from '../support/lease-churn.js';
import { useQuietApp } from './quiet-app.js';

/**
 * Autovacuum reaches a database once a minute; at 15,000 jobs/s awa.active_leases held a minute of
 * dead rows (233 MB for 1,000 live ones), which every rescue read. The leader's orphan sweep
 * vacuums a hot table once its dead rows outnumber its live ones and VACUUM_MIN_DEAD_ROWS.
 */
describe('the leader vacuums the hot tables between autovacuum visits', () => {
  const churn = leaseChurn(() => ctx.url);
  const ctx = useQuietApp({}, { truncate: false, reset: () => churn.vacuumed() });
  const service = () => ctx.app.get(MaintenanceService);
  const task = () => ctx.app.get(HotTableVacuumTask);
  beforeAll(async () => {
    await ctx.exec(`ALTER TABLE awa.active_leases SET (${churn.autovacuumAway})`); // only the leader's vacuums
  });
  /** The vacuums of awa.active_leases that `body` ran. */
  const vacuumsBy = async (body: () => Promise<unknown>) => {
    const before = await churn.vacuumCount();
    await body();
    return (await churn.vacuumCount()) - before;
  };

  it('the orphan sweep vacuums awa.active_leases once its dead rows outnumber the live ones and the minimum', async () => {
    await churn.leave(1_000, VACUUM_MIN_DEAD_ROWS + 2_000);
    expect(await vacuumsBy(() => service().sweepOrphans())).toBe(1);
    expect(await churn.counts()).toEqual({ live: 1_000, dead: 0 });
    // The task from here on: a second orphan sweep would rescue these leases (no instance holds them).
    expect(await vacuumsBy(() => task().run())).toBe(0);
  });

  it('leaves fewer dead rows than the minimum, or than the live rows, to autovacuum', async () => {
    await churn.leave(0, VACUUM_MIN_DEAD_ROWS - 1_000);
    expect(await vacuumsBy(() => task().run())).toBe(0);
    await churn.leave(VACUUM_MIN_DEAD_ROWS * 2, 0);
    await churn.leave(0, 2_000);
    expect(await churn.counts()).toEqual({ live: VACUUM_MIN_DEAD_ROWS * 2, dead: VACUUM_MIN_DEAD_ROWS + 1_000 });
    expect(await vacuumsBy(() => task().run())).toBe(0);
    await churn.leave(0, VACUUM_MIN_DEAD_ROWS);
    expect(await vacuumsBy(() => task().run())).toBe(1);
  });

  it('spaces its vacuums out while an open snapshot keeps the dead rows, and comes back once another vacuum removed them', async () => {
    const holder = new pg.Client({ connectionString: ctx.url });
    await holder.connect();
    try {
      await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await holder.query('SELECT count(*) FROM awa.active_leases'); // its snapshot keeps what dies after
      await churn.leave(0, VACUUM_MIN_DEAD_ROWS + 2_000);
      expect(await task().run()).toBe(1);
      expect(await churn.counts()).toEqual({ live: 0, dead: VACUUM_MIN_DEAD_ROWS + 2_000 }); // all kept
      // Gained since: fewer than were left behind.
      await churn.leave(0, VACUUM_MIN_DEAD_ROWS + 1_000);
      expect(await vacuumsBy(() => task().run())).toBe(0);
      await churn.leave(0, 1_000);
      expect(await vacuumsBy(() => task().run())).toBe(1);
    } finally {
      await holder.end();
    }
    await churn.vacuumed(); // as an autovacuum would
    await churn.leave(0, VACUUM_MIN_DEAD_ROWS);
    expect(await vacuumsBy(() => task().run())).toBe(1);
  });

  it('after a vacuum that failed, tries the table again only once its dead rows doubled', async () => {
    const db = ctx.app.get(AwaDatabase);
    const execute = db.execute.bind(db);
    // A VACUUM that fails as one past statementTimeout would (a table grown huge): the statement is
    // refused before it reaches PostgreSQL, everything else runs as it is.
    const spy = jest
      .spyOn(db, 'execute')
      .mockImplementation((statement, ...values) =>
        statement === statisticsSql.vacuumTable.active_leases
          ? Promise.reject(new Error('vacuum failed'))
          : execute(statement, ...values),
      );
    try {
      await churn.leave(0, VACUUM_MIN_DEAD_ROWS + 2_000);
      await expect(task().run()).rejects.toThrow('vacuum failed');
      await churn.leave(0, VACUUM_MIN_DEAD_ROWS); // fewer new dead rows than there were
      expect(await task().run()).toBe(0);
    } finally {
      spy.mockRestore();
    }
    await churn.leave(0, 2_000); // now as many
    expect(await vacuumsBy(() => task().run())).toBe(1);
    expect(await churn.counts()).toEqual({ live: 0, dead: 0 });
  });

  it('leaves a table alone whose owner turned its autovacuum off', async () => {
    await ctx.exec('ALTER TABLE awa.active_leases SET (autovacuum_enabled = false)');
    try {
      await churn.leave(0, VACUUM_MIN_DEAD_ROWS * 2);
      expect(await vacuumsBy(() => task().run())).toBe(0);
    } finally {
      await ctx.exec('ALTER TABLE awa.active_leases RESET (autovacuum_enabled)');
    }
  });
});

describe('isWorthVacuuming', () => {
  const row = (live: number, dead: number) =>
    ({ table_name: 'active_leases', live_rows: live, dead_rows: dead, vacuums: 1 }) as const;
  it('needs the dead rows gained to reach the minimum, the live rows and the rows left behind', () => {
    expect(isWorthVacuuming(row(1_000, VACUUM_MIN_DEAD_ROWS), 0)).toBe(true);
    expect(isWorthVacuuming(row(1_000, VACUUM_MIN_DEAD_ROWS - 1), 0)).toBe(false);
    expect(isWorthVacuuming(row(50_000, 49_999), 0)).toBe(false);
    expect(isWorthVacuuming(row(50_000, 50_000), 0)).toBe(true);
    expect(isWorthVacuuming(row(0, 30_000), 15_000)).toBe(true);
    expect(isWorthVacuuming(row(0, 29_999), 15_000)).toBe(false);
  });
});
