import { Injectable, Logger } from '@nestjs/common';
import { AwaMessages } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { statisticsSql } from '../../sql/index.js';
import { HOT_TABLES, type DeadRowsRow, type HotTable } from '../../sql/statistics.sql.js';
import type { MaintenanceTask } from './maintenance-task.js';

/** Fewer new dead rows than this are left to autovacuum: a vacuum reads the table's indexes whole. */
export const VACUUM_MIN_DEAD_ROWS = 10_000;

/**
 * Vacuums a hot table (awa.jobs, awa.active_leases, awa.job_dependencies) between autovacuum's
 * visits. Autovacuum reaches a database once a minute (autovacuum_naptime, which no table setting
 * lowers), and these tables churn at the job rate while holding only the backlog: at 15,000 jobs/s
 * awa.jobs held 525 MB and awa.active_leases 183 MB, a minute of dead row versions, for a few
 * thousand live rows, and every rescue read the lease table whole. Vacuumed at each orphan sweep
 * once dead rows outnumber the live ones, they stayed at 43 and 13 MB.
 *
 * A vacuum leaves the dead rows an open snapshot still needs; they are counted again at the next
 * look. So a table is vacuumed when the dead rows gained since its last vacuum number at least
 * VACUUM_MIN_DEAD_ROWS, its live rows and those left behind: while a long transaction holds them,
 * the vacuums space out instead of repeating every sweep, as they do after a vacuum that failed. A
 * table with autovacuum turned off (`autovacuum_enabled = false`) is left as it is, as is a table
 * this role may not vacuum. Returns the tables vacuumed.
 */
@Injectable()
export class HotTableVacuumTask implements MaintenanceTask<'hot table vacuum'> {
  readonly name = 'hot table vacuum';
  /** One look per tick. */
  readonly batchSize = Number.POSITIVE_INFINITY;
  private readonly logger = new Logger('AwaMaintenance');
  /** Each table's dead rows kept through this instance's last vacuum of it, and its vacuums then. */
  private readonly leftBehind = new Map<HotTable, { dead: number; vacuums: number }>();

  constructor(private readonly db: AwaDatabase) {}

  /** The hot tables worth a vacuum now. */
  async find(): Promise<DeadRowsRow[]> {
    const rows = await this.db.query(statisticsSql.readDeadRows, [HOT_TABLES]);
    return rows.filter((row) => {
      const left = this.leftBehind.get(row.table_name);
      // Another vacuum since ours (an autovacuum) took the rows left behind, or left its own.
      return isWorthVacuuming(row, left && left.vacuums === row.vacuums ? left.dead : 0);
    });
  }

  async run(): Promise<number> {
    const due = await this.find();
    const vacuumed: DeadRowsRow[] = [];
    for (const row of due) {
      try {
        // Not in a transaction: VACUUM cannot run in one.
        await this.db.execute(statisticsSql.vacuumTable[row.table_name]);
      } catch (error) {
        // A vacuum that failed (one longer than statementTimeout: a table grown huge) is not tried
        // again at every sweep, where it would keep autovacuum off the table: only once the dead
        // rows doubled, or after another vacuum.
        this.leftBehind.set(row.table_name, { dead: row.dead_rows, vacuums: row.vacuums });
        await this.noteLeftBehind(vacuumed).catch(() => undefined); // the vacuum's error is the one to report
        throw error;
      }
      vacuumed.push(row);
    }
    await this.noteLeftBehind(vacuumed);
    return due.length;
  }

  /** What the vacuums of `vacuumed` (the rows read before them) left behind, in one read. */
  private async noteLeftBehind(vacuumed: DeadRowsRow[]): Promise<void> {
    if (vacuumed.length === 0) return;
    const after = await this.db.query(statisticsSql.readDeadRows, [vacuumed.map((row) => row.table_name)]);
    for (const { table_name: table, dead_rows: dead } of vacuumed) {
      const left = after.find((row) => row.table_name === table);
      if (left) this.leftBehind.set(table, { dead: left.dead_rows, vacuums: left.vacuums });
      this.logger.debug(AwaMessages.vacuumed(table, dead, left?.dead_rows ?? 0));
    }
  }
}

/** Whether the dead rows gained since `leftBehind` reach VACUUM_MIN_DEAD_ROWS, the live rows and `leftBehind`. */
export function isWorthVacuuming({ live_rows: live, dead_rows: dead }: DeadRowsRow, leftBehind: number): boolean {
  const gained = dead - leftBehind;
  return gained >= Math.max(VACUUM_MIN_DEAD_ROWS, live, leftBehind);
}
