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

/** The ring a job of final state `state` (a column or expression) is written to. */
export const historyClass = (state: string) => `CASE WHEN ${state} = 'completed' THEN 'completed' ELSE 'failed' END`;

/** Every column of job row `j` in table order, those in `set` changed (expressions over `j`). */
export const jobRowAfter = (set: Record<string, string>) =>
  JOB_TABLE_COLUMNS.map((c) => `${set[c] ?? `j.${c}`} AS ${c}`).join(', ');
