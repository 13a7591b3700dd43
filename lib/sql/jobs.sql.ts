import { AWA_CANCEL_CHANNEL } from '../awa.constants.js';
import type { JobError, JobState } from '../interfaces/job.interface.js';
import { appendError, statement } from './sql-statement.js';

/** A job row as getJob returns it (JOB_COLUMNS). */
export interface JobRow {
  id: string;
  kind: string;
  queue: string;
  args: unknown;
  state: JobState;
  priority: number;
  attempt: number;
  max_attempts: number;
  run_at: Date;
  created_at: Date;
  attempted_at: Date | null;
  finalized_at: Date | null;
  errors: JobError[];
  run_lease: string;
  tags: string[];
  unique_key: string | null;
  snoozes: number;
  progress: unknown;
  output: unknown;
}

/** Columns of a job as `JobRecord` reads them. */
export const JOB_COLUMNS = `id::text, kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
  attempted_at, finalized_at, errors, run_lease::text, tags, unique_key, snoozes, progress, output`;

/**
 * Inserts jobs from one JSON array of {kind, queue, args, priority, max_attempts, run_at, traceparent?}.
 * A job whose run_at is in the future starts `scheduled`. The insert trigger NOTIFYs the queues.
 * Ids come back in input order (identity values are drawn in insert order).
 */
export const insertJobs = statement<[jobsJson: string], { id: string }>(
  'insert_jobs',
  `
  INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, run_at, state, traceparent)
  SELECT t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.priority, t.max_attempts, coalesce(t.run_at, now()),
         CASE WHEN t.run_at > now() THEN 'scheduled' ELSE 'available' END, t.traceparent
    FROM json_to_recordset($1::json)
      AS t(kind text, queue text, args jsonb, priority smallint, max_attempts integer, run_at timestamptz,
           traceparent text)
  RETURNING id::text`,
);

export const getJob = statement<[id: string], JobRow>(
  'get_job',
  `SELECT ${JOB_COLUMNS} FROM awa.jobs WHERE id = $1::bigint`,
);

/**
 * Cancels a job that is not running and not finished. Returns its previous state, queue and kind, or nothing.
 * A running job gets a stored cancel request instead (see requestCancel).
 */
export const cancelWaitingJob = statement<
  [id: string, error: string],
  { previous_state: JobState; queue: string; kind: string }
>(
  'cancel_waiting_job',
  `
  WITH target AS (
    SELECT id, state FROM awa.jobs
     WHERE id = $1::bigint AND state IN ('scheduled', 'available', 'retryable')
     FOR UPDATE
  )
  UPDATE awa.jobs j SET state = 'cancelled', finalized_at = now(), ${appendError('$2::text')}
    FROM target WHERE j.id = target.id
  RETURNING target.state AS previous_state, j.queue, j.kind`,
);

/**
 * Stores a cancel request on the lease of running job $1 and NOTIFYs `awa_cancel` so its instance
 * aborts the handler at once (its heartbeat finds the request anyway). Every later transition of
 * that attempt (completion, failure, release, rescue) then ends the job `cancelled`. Returns the
 * job's state and whether a lease was flagged; nothing for an unknown id. Locks only the lease row,
 * the order in which completions lock (lease, then job), so it never deadlocks with them.
 */
export const requestCancel = statement<[id: string], { state: JobState; signalled: boolean; notified: string }>(
  'request_cancel',
  `
  WITH flagged AS (
    UPDATE awa.active_leases l SET cancel_requested = true WHERE l.job_id = $1::bigint
    RETURNING l.job_id
  )
  SELECT j.state, EXISTS (SELECT FROM flagged) AS signalled,
         (SELECT count(pg_notify('${AWA_CANCEL_CHANNEL}', f.job_id::text)) FROM flagged f) AS notified
    FROM awa.jobs j WHERE j.id = $1::bigint`,
);
