import { statement } from '../sql/sql-statement.js';

/** One (queue, state) count of the unfinished jobs, with the age of the oldest due available job. */
export interface QueueDepthRow {
  queue: string;
  state: 'scheduled' | 'available' | 'running' | 'retryable' | 'waiting';
  count: number;
  /** Seconds since run_at of the oldest available job; null for the other states. */
  oldest_available_s: number | null;
}

/**
 * The leader's gauges: unfinished jobs by queue and state, and how long the oldest available job of
 * each queue has been due. Each part reads one partial index (available; scheduled and retryable) or
 * the leases (running), so finished jobs are never read, however many there are.
 */
export const queueDepths = statement<[], QueueDepthRow>(
  'telemetry_queue_depths',
  `
  SELECT queue, 'available' AS state, count(*)::int AS count,
         greatest(extract(epoch FROM now() - min(run_at)), 0)::float8 AS oldest_available_s
    FROM awa.jobs WHERE state = 'available' GROUP BY queue
  UNION ALL
  SELECT queue, state, count(*)::int, NULL FROM awa.jobs
   WHERE state IN ('scheduled', 'retryable') GROUP BY queue, state
  UNION ALL
  SELECT queue, 'waiting', count(*)::int, NULL FROM awa.jobs WHERE state = 'waiting' GROUP BY queue
  UNION ALL
  SELECT j.queue, 'running', count(*)::int, NULL
    FROM awa.active_leases l JOIN awa.jobs j ON j.id = l.job_id AND j.run_lease = l.run_lease
   WHERE j.state = 'running' GROUP BY j.queue`,
);

/**
 * The end of the window the ended-workflow count may read: now, or the start of the oldest transaction
 * open on this database if older. A job's finalized_at is its transaction's now() (its start), so every
 * job finalized before this cutoff was finalized by a transaction that has ended: a statement run after
 * this one sees all of them that committed. Its own statement: read after the count's snapshot, a
 * transaction could commit in between and be lost. Only client backends: autovacuum writes no job.
 * Never before $1, the previous cutoff.
 */
export const workflowCountCutoff = statement<[since: string | null], { cutoff: string }>(
  'telemetry_workflow_count_cutoff',
  `SELECT greatest($1::timestamptz, least(now(), min(xact_start)))::text AS cutoff
     FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'`,
);

/** How many workflows ended with `outcome` in a window. */
export interface EndedWorkflowsRow {
  outcome: 'completed' | 'failed' | 'cancelled';
  count: number;
}

/**
 * The workflows whose last job ended in [$1, $2), by outcome: completed if every job completed, else
 * failed if any failed, else cancelled. Candidates: the finished workflow jobs of the window, from the
 * partial index job_history_workflow_finalized_idx (plain jobs are not in it); each candidate's jobs by
 * the workflow indexes: ended if none is unfinished (now) and none ended at or after $2 (a later window
 * counts it). A workflow retried by retryWorkflow and ended again is counted again.
 */
export const endedWorkflows = statement<[since: string, cutoff: string], EndedWorkflowsRow>(
  'telemetry_ended_workflows',
  `
  WITH candidates AS (
    SELECT DISTINCT workflow_id FROM awa.job_history
     WHERE workflow_id IS NOT NULL AND finalized_at >= $1::timestamptz AND finalized_at < $2::timestamptz
  ), ended AS (
    SELECT CASE WHEN bool_and(a.state = 'completed') THEN 'completed'
                WHEN bool_or(a.state = 'failed') THEN 'failed' ELSE 'cancelled' END AS outcome
      FROM candidates c JOIN awa.all_jobs a ON a.workflow_id = c.workflow_id
     GROUP BY c.workflow_id
    HAVING bool_and(a.state IN ('completed', 'failed', 'cancelled')) AND max(a.finalized_at) < $2::timestamptz
  )
  SELECT outcome, count(*)::int AS count FROM ended GROUP BY outcome`,
);
