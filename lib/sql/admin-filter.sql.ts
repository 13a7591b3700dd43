import { JOB_COLUMNS, type JobRow } from './jobs.sql.js';
import { statement, type SqlStatement } from './sql-statement.js';

/** What the admin service's statements over a filter are built from (see lib/admin/job-filter.ts). */
export interface FilterSql {
  /** Names the fragments present; part of the statement name, so one text per name. */
  readonly key: string;
  /** Fixed fragments joined by AND, their values parameters from $first (after the statement's own). */
  where(first: number): string;
}

/** Statements over a filter: one text per filter shape, named after it, built once. */
const built = new Map<string, SqlStatement>();
export function filtered<P extends unknown[], R>(
  name: string,
  filter: FilterSql,
  text: () => string,
): SqlStatement<P, R> {
  const full = `admin_${name}_${filter.key}`;
  let found = built.get(full);
  if (!found) built.set(full, (found = statement<P, R>(full, text())));
  return found as SqlStatement<P, R>;
}

/** Jobs matching the filter (from $3) with id <= $2, newest first, at most $1: keyset pagination by id. */
export const listJobs = (filter: FilterSql) =>
  filtered<[limit: number, cursor: string, ...filter: unknown[]], JobRow>(
    'list',
    filter,
    // `j.id`: a bare `id` in ORDER BY would be the output column id::text, and sort as text.
    () => `SELECT ${JOB_COLUMNS} FROM awa.all_jobs j WHERE j.id <= $2::bigint AND ${filter.where(3)}
           ORDER BY j.id DESC LIMIT $1`,
  );

/** How many jobs match the filter (from $2), counting no further than $1. */
export const countJobs = (filter: FilterSql) =>
  filtered<[cap: number, ...filter: unknown[]], { count: number }>(
    'count',
    filter,
    () => `SELECT count(*)::int AS count FROM (SELECT FROM awa.all_jobs WHERE ${filter.where(2)} LIMIT $1) s`,
  );
