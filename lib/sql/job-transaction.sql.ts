import { appendError, statement } from './sql-statement.js';
import { changeJobs } from './job-history.sql.js';

/*
 * job.transaction(): the handler's writes and the job's completion in one transaction of the app's
 * DataSource. The fence is the attempt's lease row, locked FOR KEY SHARE for the whole transaction:
 *  - every rescue (stale heartbeat, deadline, dead instance) picks lease rows FOR UPDATE SKIP LOCKED,
 *    so it skips this one until the transaction ends, then finds it gone (committed) or takes it;
 *  - the worker's own ends (completion, failure, release, cancel, back-off, snooze) DELETE the lease
 *    row, so they wait, then find it gone;
 *  - a cancel request (UPDATE cancel_requested) and a heartbeat (UPDATE heartbeat_at) change no key
 *    column: KEY SHARE lets them through, so a long transaction never stalls the instance's
 *    heartbeats. The completion refuses a lease with a cancel request, re-read under its row lock.
 */

/** Whether attempt ($1 id, $2 lease) still holds its job, and then its cancel request. */
export interface HeldAttemptRow {
  cancel_requested: boolean;
}

/**
 * Takes the fence of attempt ($1 job id, $2 run lease): locks its lease row FOR KEY SHARE if the
 * attempt still holds it and its job runs on it. No row: the attempt no longer owns the job. $3
 * (ms as text, null: left as it is) is the transaction's idle_in_transaction_session_timeout, set
 * first in the same round trip.
 */
export const holdAttempt = statement<[id: string, runLease: string, idleTimeout: string | null], HeldAttemptRow>(
  'job_transaction_hold',
  `
  WITH limits AS MATERIALIZED (
    SELECT set_config('idle_in_transaction_session_timeout',
                      coalesce($3::text, current_setting('idle_in_transaction_session_timeout')), true) AS idle
  )
  SELECT l.cancel_requested FROM limits, awa.active_leases l
    JOIN awa.jobs j ON j.id = l.job_id AND j.run_lease = l.run_lease AND j.state = 'running'
   WHERE l.job_id = $1::bigint AND l.run_lease = $2::bigint
     FOR KEY SHARE OF l`,
);

/**
 * Completes attempt ($1 id, $2 lease) inside the handler's transaction, storing $3 (its output as
 * JSON text, null: none) and appending $4 (a note for the errors, null: none), as
 * workerSql.completeJobsWithOutput does for a batch. Fenced on the lease row, and refused (no row)
 * when a cancel was requested: a cancelled job's handler writes never land.
 */
export const completeAttempt = statement<
  [id: string, runLease: string, output: string | null, note: string | null],
  { id: string; run_lease: string }
>(
  'job_transaction_complete',
  `
  WITH input AS (
    SELECT $1::bigint AS job_id, $2::bigint AS run_lease, $3::text AS output, $4::text AS note
  ), released AS (
    DELETE FROM awa.active_leases l
     WHERE l.job_id = $1::bigint AND l.run_lease = $2::bigint AND NOT l.cancel_requested
    RETURNING l.job_id, l.run_lease, l.cancel_requested, l.flow_queue AS queue, l.concurrency_key
  ), ${changeJobs({
    from: 'input f JOIN released r ON r.job_id = f.job_id AND r.run_lease = f.run_lease',
    id: 'f.job_id',
    where: `j.run_lease = f.run_lease AND j.state = 'running'`,
    set: {
      state: `'completed'`,
      finalized_at: 'now()',
      output: 'f.output::jsonb',
      errors: `CASE WHEN f.note IS NOT NULL THEN ${appendError('f.note')} ELSE j.errors END`,
    },
  })}
  SELECT id::text, run_lease::text FROM finished`,
);
