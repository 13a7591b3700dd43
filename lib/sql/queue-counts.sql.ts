import type { JobState } from '../interfaces/job.interface.js';
import { msAgo, statement } from './sql-statement.js';

/*
 * What the dashboard's overview and QueueAdmin.queueStates read on each refresh (lib/admin/queue-counts.ts):
 * exact counts of the unfinished states from their indexes, capped samples of the finished ones, and
 * the planner's estimate beyond the caps. None reads the whole table.
 */

/** One (queue, unfinished state) count of a queue, or its row alone (state NULL, count 0). */
export interface QueueWaitingRow {
  name: string;
  paused_at: Date | null;
  state: JobState | null;
  count: number;
  oldest_available_at: Date | null;
  /** Age of the oldest available job on the database clock (at execution, see msAgo), in ms. */
  oldest_available_ms: number | null;
}

/**
 * Every queue known without reading finished jobs: with a waiting or running job, a row in
 * awa.queues, in $1 (this app's handler queues), or among the planner's most common queues; its
 * pause, and its exact counts of the unfinished states with the run_at of its oldest available
 * job. It reads only unfinished jobs, through jobs_claim_kind_idx (available), jobs_due_kind_idx
 * (scheduled, retryable) and the leases (running): its cost follows the backlog, never the number
 * of finished jobs kept (see finishedSample and estimateJobs for those).
 */
export const queueWaitingCounts = statement<[queues: string[]], QueueWaitingRow>(
  'admin_queue_waiting_counts',
  `
  WITH waiting AS (
    SELECT queue, 'available'::text AS state, count(*)::int AS n, min(run_at) AS oldest
      FROM awa.jobs WHERE state = 'available' GROUP BY queue
    UNION ALL
    SELECT queue, state, count(*)::int, NULL FROM awa.jobs
     WHERE state IN ('scheduled', 'retryable') GROUP BY queue, state
    UNION ALL
    SELECT queue, 'waiting', count(*)::int, NULL FROM awa.jobs WHERE state = 'waiting' GROUP BY queue
    UNION ALL
    SELECT j.queue, 'running', count(DISTINCT j.id)::int, NULL
      FROM awa.active_leases l JOIN awa.jobs j ON j.id = l.job_id
     WHERE j.state = 'running' GROUP BY j.queue
  ), names AS (
    SELECT queue AS name FROM waiting UNION SELECT name FROM awa.queues UNION SELECT unnest($1::text[])
    UNION SELECT unnest(most_common_vals::text::text[]) FROM pg_stats
     WHERE schemaname = 'awa' AND (tablename = 'jobs' OR tablename LIKE 'job\\_history\\_%') AND attname = 'queue'
  )
  SELECT n.name, q.paused_at, w.state, coalesce(w.n, 0) AS count, w.oldest AS oldest_available_at,
         ${msAgo('w.oldest')} AS oldest_available_ms
    FROM names n LEFT JOIN waiting w ON w.queue = n.name LEFT JOIN awa.queues q ON q.name = n.name
   ORDER BY n.name, w.state`,
);

/** The samples of finishedSample. */
export type FinishedSample = 'finished' | 'failed' | 'cancelled';

/** One (queue, state) count of one sample, and how many jobs that sample took in all. */
export interface FinishedSampleRow {
  sample: FinishedSample;
  queue: string;
  state: JobState;
  count: number;
  total: number;
}

/**
 * Finished jobs per (queue, state) in three samples: at most $1 finished jobs (finalized_at set,
 * read in table order: pages read one after the other), and at most $2 failed and $2 cancelled ones
 * (jobs_admin_state_idx, then one heap page per job: hence the smaller cap). A sample whose total is
 * under its cap took every such job, so its counts are exact; one that reached it stopped there,
 * and its state is estimated instead. At most $1 + 2 × $2 rows read, however many jobs are kept.
 */
export const finishedSample = statement<[cap: number, rareCap: number], FinishedSampleRow>(
  'admin_finished_sample',
  `
  WITH finished AS (
    SELECT queue, state FROM awa.all_jobs WHERE finalized_at IS NOT NULL LIMIT $1
  ), failed AS (
    SELECT queue, state FROM awa.all_jobs WHERE state = 'failed' LIMIT $2
  ), cancelled AS (
    SELECT queue, state FROM awa.all_jobs WHERE state = 'cancelled' LIMIT $2
  ), samples AS (
    SELECT 'finished' AS sample, queue, state FROM finished
    UNION ALL SELECT 'failed', queue, state FROM failed
    UNION ALL SELECT 'cancelled', queue, state FROM cancelled
  )
  SELECT sample, queue, state, count(*)::int AS count, (sum(count(*)) OVER (PARTITION BY sample))::int AS total
    FROM samples GROUP BY sample, queue, state
   ORDER BY 1, 2, 3`,
);

/**
 * The planner's estimate (awa.estimate_jobs: planned, never run) of the jobs of queue $1[i] in state
 * $2[i]: what ANALYZE (autovacuum) last saw, scaled to the table's current size.
 */
export const estimateJobs = statement<[queues: string[], states: string[]], EstimateRow>(
  'admin_estimate_jobs',
  `SELECT q AS queue, s AS state, awa.estimate_jobs(q, s)::float8 AS estimate FROM unnest($1::text[], $2::text[]) t (q, s)`,
);
export interface EstimateRow {
  queue: string;
  state: JobState;
  estimate: number;
}
