import { statement, type SqlStatement } from './sql-statement.js';

/**
 * The tables every job passes through. They stay as small as the backlog while churning at the job
 * rate, so their size can swing a hundredfold within seconds, between two ANALYZEs.
 */
export const HOT_TABLES = ['jobs', 'active_leases', 'job_dependencies'] as const;
export type HotTable = (typeof HOT_TABLES)[number];

/**
 * The hot tables among $1, with their statistics (c: pg_class, s: pg_stat_user_tables), that this
 * role may ANALYZE and VACUUM: it owns them (or is a superuser). Others are left to autovacuum.
 */
const HOT_TABLES_OWNED = `
    FROM pg_class c
    JOIN pg_stat_user_tables s ON s.relid = c.oid
   WHERE c.relnamespace = 'awa'::regnamespace AND c.relname = ANY($1::text[])
     AND pg_has_role(c.relowner, 'USAGE')`;

/** One statement per hot table (a table name cannot be a parameter): `command awa.<table>`. */
function perHotTable(name: string, command: string): Readonly<Record<HotTable, SqlStatement<[], never>>> {
  return Object.fromEntries(
    HOT_TABLES.map((table) => [table, statement<[], never>(`${name}_${table}`, `${command} awa.${table}`)]),
  ) as Record<HotTable, SqlStatement<[], never>>;
}

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
    ${HOT_TABLES_OWNED}
     AND c.relpages > 0 AND c.reltuples >= 0
   ORDER BY c.relname`,
);

/** ANALYZE of each hot table. */
export const analyzeTable = perHotTable('analyze', 'ANALYZE');

/** What the statistics collector says of a hot table's dead rows. */
export interface DeadRowsRow {
  table_name: HotTable;
  live_rows: number;
  /** Row versions deleted or updated away and not yet vacuumed (the collector's count). */
  dead_rows: number;
  /** Vacuums of the table so far, by hand and by autovacuum. */
  vacuums: number;
}

/**
 * The live and dead row counts of the hot tables ($1) that this role may VACUUM (it owns them, or is
 * a superuser), but those whose owner turned autovacuum off (`autovacuum_enabled = false`: vacuumed
 * by hand, as they chose).
 */
export const readDeadRows = statement<[tables: readonly HotTable[]], DeadRowsRow>(
  'read_dead_rows',
  `
  SELECT c.relname::text AS table_name, s.n_live_tup::float8 AS live_rows, s.n_dead_tup::float8 AS dead_rows,
         (s.vacuum_count + s.autovacuum_count)::float8 AS vacuums
    ${HOT_TABLES_OWNED}
     AND NOT EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) o
                      WHERE o.option_name = 'autovacuum_enabled' AND NOT o.option_value::bool)
   ORDER BY c.relname`,
);

/**
 * VACUUM of each hot table, one statement each. SKIP_LOCKED: a table another vacuum (an autovacuum)
 * holds is left to it, instead of waiting.
 */
export const vacuumTable = perHotTable('vacuum', 'VACUUM (SKIP_LOCKED)');
