import { statement, type SqlStatement } from './sql-statement.js';

/**
 * The tables every job passes through. They stay as small as the backlog while churning at the job
 * rate, so their size can swing a hundredfold within seconds, between two ANALYZEs.
 */
export const HOT_TABLES = ['jobs', 'active_leases', 'job_dependencies'] as const;
export type HotTable = (typeof HOT_TABLES)[number];

/** What the planner and the statistics collector say of a hot table's size. */
export interface PlannerStatisticsRow {
  table_name: HotTable;
  /** Rows the planner would count (pg_class's rows per page, times the table's pages now). */
  planned_rows: number;
  /** Live rows, as the statistics collector counts them with every insert and delete. */
  live_rows: number;
  /** Rows ever inserted (the collector's count): between two looks, the table's rate. */
  inserted_rows: number;
}

/**
 * The planned and live row counts of the hot tables ($1) that this role may ANALYZE (it owns them, or
 * is a superuser) and that have been vacuumed or analyzed (before that, the planner sizes a table by
 * its pages alone, which follows it).
 *
 * The planner takes a table's rows per page from its last VACUUM or ANALYZE and multiplies by its
 * pages now. A VACUUM or ANALYZE that ran while the backlog was empty leaves 0 rows per page on pages
 * that stay (vacuum_truncate is off), and every plan takes the table for one row until the next one,
 * however many jobs arrive meanwhile. The collector's count follows every insert and delete.
 */
export const readPlannerStatistics = statement<[tables: readonly HotTable[]], PlannerStatisticsRow>(
  'read_planner_statistics',
  `
  SELECT c.relname::text AS table_name,
         round(c.reltuples / nullif(c.relpages, 0)
               * (pg_relation_size(c.oid) / current_setting('block_size')::int))::float8 AS planned_rows,
         s.n_live_tup::float8 AS live_rows, s.n_tup_ins::float8 AS inserted_rows
    FROM pg_class c
    JOIN pg_stat_user_tables s ON s.relid = c.oid
   WHERE c.relnamespace = 'awa'::regnamespace AND c.relname = ANY($1::text[])
     AND c.relpages > 0 AND c.reltuples >= 0
     AND pg_has_role(c.relowner, 'USAGE')
   ORDER BY c.relname`,
);

/** ANALYZE of each hot table, one statement each (a table name cannot be a parameter). */
export const analyzeTable: Readonly<Record<HotTable, SqlStatement<[], never>>> = {
  jobs: statement('analyze_jobs', 'ANALYZE awa.jobs'),
  active_leases: statement('analyze_active_leases', 'ANALYZE awa.active_leases'),
  job_dependencies: statement('analyze_job_dependencies', 'ANALYZE awa.job_dependencies'),
};
