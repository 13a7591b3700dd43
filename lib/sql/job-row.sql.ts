/*
 * The shape of a job row, shared by awa.jobs and awa.job_history (migrations AwaJobHistory, AwaWorkflows):
 * the statements that move rows between them, and those that resolve workflows, build on it.
 */

/**
 * The columns of awa.jobs in table order. awa.job_history holds the same, with its segment between
 * traceparent and workflow_id (AwaWorkflows added columns after it): name the columns when inserting.
 */
export const JOB_TABLE_COLUMNS = [
  'id',
  'kind',
  'queue',
  'args',
  'state',
  'priority',
  'attempt',
  'max_attempts',
  'run_at',
  'created_at',
  'attempted_at',
  'finalized_at',
  'errors',
  'run_lease',
  'shutdown_releases',
  'tags',
  'unique_key',
  'unique_states',
  'snoozes',
  'progress',
  'output',
  'concurrency_key',
  'traceparent',
  'workflow_id',
  'waiting_on',
] as const;

/**
 * The segment of awa.job_history a job of final state `state` (a column or expression) is written to:
 * the current segment of its class's ring. Two uncorrelated sub-selects, each read once per
 * statement, where a join would probe awa.history_rings once per row.
 */
const historySegment = (state: string) =>
  `CASE WHEN ${state} = 'completed' THEN (SELECT segment FROM awa.history_rings WHERE class = 'completed')
        ELSE (SELECT segment FROM awa.history_rings WHERE class = 'failed') END`;

/** Inserts the finished job rows of `moved` (every column of awa.jobs) into awa.job_history. */
export const archiveRows = (moved: string) =>
  `INSERT INTO awa.job_history (${JOB_TABLE_COLUMNS.join(', ')}, segment)
    SELECT ${JOB_TABLE_COLUMNS.map((c) => `m.${c}`).join(', ')}, ${historySegment('m.state')}
      FROM ${moved} m`;

/** Every column of job row `j` in table order, those in `set` changed (expressions over `j`). */
export const jobRowAfter = (set: Record<string, string>) =>
  JOB_TABLE_COLUMNS.map((c) => `${set[c] ?? `j.${c}`} AS ${c}`).join(', ');
