/** Brands a statement with its types; never set at run time. */
declare const SQL_TYPES: unique symbol;

/**
 * A named SQL statement, typed by its parameters P ($1 first) and the row R it returns (`never`:
 * no rows). The name doubles as the prepared-statement name, so each statement is parsed and
 * planned once per connection. `SqlStatement` alone is any statement, for code that only reads
 * its name and text.
 */
export interface SqlStatement<P extends unknown[] = unknown[], R = unknown> {
  readonly name: string;
  readonly text: string;
  /**
   * Makes each row from its columns in order and the values the statement was run with, when set:
   * the rows are read as arrays (pg's rowMode 'array') and become objects of one fixed shape, where
   * pg would build a dictionary-mode object per row. Only for the claim, which reads a row per job
   * (see claimSql.claimedRowOf).
   */
  readonly row?: (columns: unknown[], values: readonly unknown[]) => R;
  readonly [SQL_TYPES]?: { params: P; row: R };
}

/** A call site's values for parameters P: optional for a statement that has none. */
export type SqlValues<P extends unknown[]> = P extends [] ? [values?: P] : [values: P];

/** The parameters of statement S. */
export type SqlParams<S> = S extends SqlStatement<infer P, unknown> ? P : never;

/**
 * Names a statement and declares its types: `statement<[id: string], { state: JobState }>(...)`.
 * P and R default to `never`, so a statement declared without them cannot be run.
 */
export function statement<P extends unknown[] = never, R = never>(
  name: string,
  text: string,
  row?: (columns: unknown[], values: readonly unknown[]) => R,
): SqlStatement<P, R> {
  // Whitespace is folded into one line, so a `--` comment would swallow the rest of the statement.
  if (/--/.test(text)) throw new Error(`SQL statement ${name} contains a -- comment; put comments in TypeScript`);
  const folded = { name: `awa_${name}`, text: text.replace(/\s+/g, ' ').trim() };
  return row ? { ...folded, row } : folded;
}

/**
 * `unnest` over array parameters (`'$1::bigint[]'`, ...), each through a sub-select so that no
 * plan sees how many elements there are: a custom plan then costs what the generic one does and
 * looks each row up by key, however far off the table's statistics are (see LEASE_PAIRS in
 * worker.sql.ts for what it cost once).
 */
export const unnestHidden = (...arrays: string[]) => `unnest(${arrays.map((a) => `(SELECT ${a})`).join(', ')})`;

/**
 * `column` within the span of a batch's job ids (`id` over `from`), beside the join that matches
 * them: awa.jobs is then read only there, whichever side of the join the planner reads first.
 * Statistics taken while the table was empty (vacuumed after a quiet spell; vacuum_truncate is off,
 * so its pages stay) make every row look like one, and a plan that read awa.jobs first scanned all
 * of it for each half of a completion: 16 s for 512 jobs over 100,000 rows, until the next ANALYZE.
 * A range, not `= ANY(ids)`: beside the key lookup it costs nothing, where an array of 512 ids made
 * each of the 512 lookups walk it (a quarter slower).
 */
export const withinIds = (column: string, id: string, from: string) =>
  `${column} BETWEEN (SELECT min(${id}) FROM ${from}) AND (SELECT max(${id}) FROM ${from})`;

/**
 * Whether the (job, lease) pair `pair` (two expressions, `'j.id, j.run_lease'`) is among the rows of
 * `from` (a FROM item whose alias `alias` has job_id and run_lease), those where `where` holds: a
 * hashed sub-plan, so there is no join for the statistics to order. IS TRUE keeps PostgreSQL from
 * turning the IN into a join. A batch joined to a table its statistics took for one row (an
 * autovacuum in a lull) read the table, or the batch, once per row of the other
 * (test/sql/lease-fence-plan.spec.ts).
 */
export const pairAmong = (pair: string, from: string, alias: string, where?: string) =>
  `((${pair}) IN (SELECT ${alias}.job_id, ${alias}.run_lease FROM ${from}${where ? ` WHERE ${where}` : ''})) IS TRUE`;

/** `ms` milliseconds as an interval, from a float8 parameter or expression. */
export const millis = (expr: string) => `(${expr})::float8 * interval '1 millisecond'`;

/**
 * How long ago timestamp `expr` was, in ms (float8), for display: by the clock at execution, not
 * now(). now() is fixed when the statement's transaction starts, and a write that commits before
 * its snapshot (a loaded server plans the statement in between) would look younger than zero.
 */
export const msAgo = (expr: string) => `(extract(epoch FROM clock_timestamp() - ${expr}) * 1000)::float8`;

/**
 * When a failed attempt runs again: base * 2^(attempt-1), plus up to 25% jitter, capped.
 * One formula for worker failures and maintenance rescues.
 */
export const retryAt = (attempt: string, baseMs: string, capMs: string) =>
  `now() + ${millis(`least(${baseMs} * power(2, least(${attempt} - 1, 60)) * (1 + random() * 0.25), ${capMs})`)}`;

/** Job row `j`'s errors with an `{at, attempt, error}` entry appended (an expression). */
export const appendError = (errorText: string) =>
  `j.errors || jsonb_build_array(jsonb_build_object('at', ` + `now(), 'attempt', j.attempt, 'error', ${errorText}))`;

/** The changed columns of a job row, each an expression over the old row `j` (see finishJobs). */
export type JobChanges = Record<string, string> & { state: string };

/** Whether job row `j`'s attempt has spent all its attempts. */
export const LAST_ATTEMPT = 'j.attempt >= j.max_attempts';

/**
 * The job-row changes of a failed attempt: retry with backoff, or fail for good; `cancelled`
 * (a boolean expression, e.g. the deleted lease's cancel_requested) ends it cancelled instead.
 */
export const failChanges = (errorText: string, baseMs: string, capMs: string, cancelled = 'false'): JobChanges => ({
  state: `CASE WHEN ${cancelled} THEN 'cancelled' WHEN ${LAST_ATTEMPT} THEN 'failed' ELSE 'retryable' END`,
  run_at: `CASE WHEN ${cancelled} OR ${LAST_ATTEMPT} THEN j.run_at
                ELSE ${retryAt('j.attempt', baseMs, capMs)} END`,
  finalized_at: `CASE WHEN ${cancelled} OR ${LAST_ATTEMPT} THEN now() END`,
  shutdown_releases: '0',
  errors: appendError(errorText),
});
