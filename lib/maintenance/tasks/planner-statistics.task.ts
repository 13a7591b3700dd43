import { Injectable, Logger } from '@nestjs/common';
import { AwaMessages } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { sessionSql, statisticsSql } from '../../sql/index.js';
import { HOT_TABLES, type HotTable, type PlannerStatisticsRow } from '../../sql/statistics.sql.js';
import type { MaintenanceTask } from './maintenance-task.js';
import { SqlState, sqlStateOf } from '../../database/sql-state.js';

/** Fewer rows off than this never changes a plan that matters: the tables are read by key. */
export const STALE_MIN_ROWS = 1_000;
/** How far off (either way) the planner's row count must be before a table is analyzed again. */
export const STALE_MIN_FACTOR = 4;
/**
 * The collector's live count lags: each backend sends its counts at most once a second, the inserting
 * and the deleting ones apart, so at 15,000 jobs/s it was off by 5,000 to 30,000 rows at any moment
 * (about two seconds of inserts). A table must be off by this many seconds of its inserts too.
 */
export const COUNT_LAG_SECONDS = 3;
/**
 * How long the ANALYZE waits for the table's lock. Below the server's deadlock_timeout (1 s by
 * default), after which PostgreSQL would cancel an autovacuum holding it: an autovacuum at work on
 * the table analyzes it itself, and its vacuum matters more.
 */
export const ANALYZE_LOCK_TIMEOUT_MS = 200;

/** A table's count of inserted rows at a look, to tell its rate at the next. */
interface Look {
  inserted: number;
  at: number;
}

/**
 * Keeps the planner's picture of the hot tables (awa.jobs, awa.active_leases, awa.job_dependencies)
 * near their size: each one whose planned row count is off from its live count by STALE_MIN_FACTOR,
 * by STALE_MIN_ROWS and by COUNT_LAG_SECONDS of its inserts is analyzed now, rather than at
 * autovacuum's next pass. A VACUUM or ANALYZE that runs while the backlog is empty leaves statistics
 * that make every plan take the table for one row; at 15,000 jobs/s, completions and claims then took
 * 3–10 times as long until the next ANALYZE, a minute later, while the backlog grew to hundreds of
 * thousands of jobs (docs/capacity.md#plans-made-from-a-moments-statistics-4-december-2026). A table
 * is judged from its second look on (its rate is known then). Tables this role does not own are left
 * to autovacuum. Returns the tables analyzed.
 */
@Injectable()
export class PlannerStatisticsTask implements MaintenanceTask<'planner statistics'> {
  readonly name = 'planner statistics';
  /** One look per tick. */
  readonly batchSize = Number.POSITIVE_INFINITY;
  private readonly logger = new Logger('AwaMaintenance');
  private readonly looks = new Map<HotTable, Look>();

  constructor(private readonly db: AwaDatabase) {}

  /** The hot tables whose statistics no longer describe them (each look also notes their rates). */
  async find(): Promise<PlannerStatisticsRow[]> {
    const rows = await this.db.query(statisticsSql.readPlannerStatistics, [HOT_TABLES]);
    const now = Date.now();
    return rows.filter((row) => {
      const previous = this.looks.get(row.table_name);
      this.looks.set(row.table_name, { inserted: row.inserted_rows, at: now });
      if (previous === undefined) return false;
      const perSecond = Math.max(0, row.inserted_rows - previous.inserted) / Math.max(1, (now - previous.at) / 1000);
      return isStale(row, Math.max(STALE_MIN_ROWS, perSecond * COUNT_LAG_SECONDS));
    });
  }

  async run(): Promise<number> {
    let analyzed = 0;
    for (const stale of await this.find()) {
      try {
        await this.db.transaction(async (client) => {
          await AwaDatabase.queryOn(client, sessionSql.setLocalLimits, [null, String(ANALYZE_LOCK_TIMEOUT_MS), null]);
          await AwaDatabase.queryOn(client, statisticsSql.analyzeTable[stale.table_name]);
        });
      } catch (error) {
        if (sqlStateOf(error) === SqlState.lockNotAvailable) continue; // autovacuum has it
        throw error;
      }
      analyzed++;
      this.logger.log(AwaMessages.reanalyzed(stale.table_name, stale.planned_rows, stale.live_rows));
    }
    return analyzed;
  }
}

/** Whether the planned and live counts differ by `minRows` and by STALE_MIN_FACTOR, either way. */
export function isStale({ planned_rows: planned, live_rows: live }: PlannerStatisticsRow, minRows: number): boolean {
  return Math.abs(live - planned) >= minRows && Math.max(live, planned) >= STALE_MIN_FACTOR * Math.min(live, planned);
}
