import { AWA_CANCEL_CHANNEL } from '../awa.constants.js';
import { appendError, statement } from './sql-statement.js';

/** Columns of a job as `JobRecord` reads them. */
const JOB_COLUMNS = `id::text, kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
  attempted_at, finalized_at, errors, run_lease::text`;

/**
 * Inserts jobs from one JSON array of {kind, queue, args, priority, max_attempts, run_at}.
 * A job whose run_at is in the future starts `scheduled`. The insert trigger NOTIFYs the queues.
 * Ids come back in input order (identity values are drawn in insert order).
 */
export const insertJobs = statement('insert_jobs', `
  INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, run_at, state)
  SELECT t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.priority, t.max_attempts, coalesce(t.run_at, now()),
         CASE WHEN t.run_at > now() THEN 'scheduled' ELSE 'available' END
    FROM json_to_recordset($1::json)
      AS t(kind text, queue text, args jsonb, priority smallint, max_attempts integer, run_at timestamptz)
  RETURNING id::text`);

export const getJob = statement('get_job', `SELECT ${JOB_COLUMNS} FROM awa.jobs WHERE id = $1::bigint`);

/**
 * Cancels a job that is not running and not finished. Returns its previous state, or nothing.
 * A running job is cancelled by signalling its worker instead (see cancelSignal).
 */
export const cancelWaitingJob = statement('cancel_waiting_job', `
  WITH target AS (
    SELECT id, state FROM awa.jobs
     WHERE id = $1::bigint AND state IN ('scheduled', 'available', 'retryable')
     FOR UPDATE
  )
  UPDATE awa.jobs j SET state = 'cancelled', finalized_at = now(), ${appendError('$2::text')}
    FROM target WHERE j.id = target.id
  RETURNING target.state AS previous_state`);

/** The state of job $1; if it is running, NOTIFYs `awa_cancel` so its instance aborts the handler. */
export const signalCancel = statement('signal_cancel', `
  SELECT state, CASE WHEN state = 'running' THEN pg_notify('${AWA_CANCEL_CHANNEL}', id::text) IS NOT NULL ELSE false END AS signalled
    FROM awa.jobs WHERE id = $1::bigint`);
