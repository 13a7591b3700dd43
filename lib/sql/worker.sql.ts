import { AWA_JOBS_CHANNEL } from '../awa.constants.js';
import { appendError, failAssignments, millis, statement } from './sql-statement.js';

/**
 * Claims up to $3 jobs of queue $1 whose kind is in $2, for instance $4, with deadline $5 ms
 * (0: none). Takes available jobs and due scheduled/retryable ones, so a due retry needs no
 * maintenance tick. Each claimed job gets state running, attempt+1, run_lease+1 and a lease row.
 * Each handled kind is read on its own (a LATERAL with its own LIMIT) from the (queue, kind)
 * indexes, so jobs of other kinds and other queues are never read, however many there are; the
 * best $3 of the per-kind candidates are claimed. The kinds come through a sub-select so that a
 * custom plan, like the generic one, cannot see how many there are: both then cost the same, and
 * the prepared statement settles on its generic plan instead of being planned on every call.
 * The update matches `id = ANY(ARRAY(...))` rather than joining `picked`: its generic plan then
 * stays a primary-key lookup, so the prepared statement is planned once, not on every call.
 */
export const claimJobs = statement('claim_jobs', `
  WITH kinds AS (
    SELECT DISTINCT kind FROM unnest((SELECT $2::text[])) AS k(kind)
  ), available AS (
    SELECT a.id, a.priority, a.run_at FROM kinds k CROSS JOIN LATERAL (
      SELECT id, priority, run_at FROM awa.jobs
       WHERE state = 'available' AND queue = $1 AND kind = k.kind
       ORDER BY priority, run_at, id
       LIMIT $3 FOR UPDATE SKIP LOCKED
    ) a
  ), due AS (
    SELECT d.id, d.priority, d.run_at FROM kinds k CROSS JOIN LATERAL (
      SELECT id, priority, run_at FROM awa.jobs
       WHERE state IN ('scheduled', 'retryable') AND run_at <= now() AND queue = $1 AND kind = k.kind
       ORDER BY run_at, id
       LIMIT $3 FOR UPDATE SKIP LOCKED
    ) d
  ), picked AS (
    SELECT id FROM (SELECT * FROM available UNION ALL SELECT * FROM due) c
     ORDER BY priority, run_at, id LIMIT $3
  ), claimed AS (
    UPDATE awa.jobs j
       SET state = 'running', attempt = j.attempt + 1, run_lease = j.run_lease + 1, attempted_at = now()
     WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
    RETURNING j.id, j.kind, j.queue, j.args, j.attempt, j.max_attempts, j.priority, j.run_lease, j.created_at
  ), leased AS (
    INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, deadline_at, claimed_at)
    SELECT id, run_lease, $4, now(), CASE WHEN $5::float8 > 0 THEN now() + ${millis('$5')} END, now()
      FROM claimed
  )
  SELECT id::text, kind, queue, args, attempt, max_attempts, priority, run_lease::text,
         (extract(epoch FROM created_at) * 1000)::float8 AS created_ms
    FROM claimed`);

/**
 * The fence shared by completion, release and cancellation: deletes the leases ($1 job ids,
 * $2 run leases) that are still held and returns them. Only those attempts may change their job.
 */
const RELEASE_HELD_LEASES = `released AS (
    DELETE FROM awa.active_leases l
     USING unnest($1::bigint[], $2::bigint[]) AS d(job_id, run_lease)
     WHERE l.job_id = d.job_id AND l.run_lease = d.run_lease
    RETURNING l.job_id, l.run_lease
  )`;

/**
 * Completes attempts ($1 job ids, $2 run leases). Fenced: only an attempt whose lease row still
 * exists is completed; the ids returned are the ones that were.
 */
export const completeJobs = statement('complete_jobs', `
  WITH ${RELEASE_HELD_LEASES}
  UPDATE awa.jobs j SET state = 'completed', finalized_at = now()
    FROM released r
   WHERE j.id = r.job_id AND j.run_lease = r.run_lease AND j.state = 'running'
  RETURNING j.id::text, j.run_lease::text`);

/**
 * Fails attempts ($1 ids, $2 leases, $3 error texts, $4 retry base ms, $5 retry cap ms): retryable
 * with backoff, or failed once attempts are spent. Fenced like completeJobs.
 */
export const failJobs = statement('fail_jobs', `
  WITH input AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::float8[], $5::float8[])
      AS f(job_id, run_lease, error, base_ms, cap_ms)
  ), released AS (
    DELETE FROM awa.active_leases l USING input f
     WHERE l.job_id = f.job_id AND l.run_lease = f.run_lease
    RETURNING l.job_id, l.run_lease
  )
  UPDATE awa.jobs j SET ${failAssignments('f.error', 'f.base_ms', 'f.cap_ms')}
    FROM input f JOIN released r ON r.job_id = f.job_id AND r.run_lease = f.run_lease
   WHERE j.id = f.job_id AND j.run_lease = f.run_lease AND j.state = 'running'
  RETURNING j.id::text, j.run_lease::text, j.state`);

/**
 * Gives attempts back ($1 ids, $2 leases, $3 error text) without spending an attempt: the job is
 * available again at once. Used on shutdown. Fenced like completeJobs; NOTIFYs the queues.
 */
export const releaseJobs = statement('release_jobs', `
  WITH ${RELEASE_HELD_LEASES}, requeued AS (
    UPDATE awa.jobs j
       SET state = 'available', attempt = j.attempt - 1, run_at = now(),
           ${appendError('$3::text')}
      FROM released r
     WHERE j.id = r.job_id AND j.run_lease = r.run_lease AND j.state = 'running'
    RETURNING j.id, j.queue
  )
  SELECT r.id::text, (SELECT count(pg_notify('${AWA_JOBS_CHANNEL}', q.queue)) FROM (SELECT DISTINCT queue FROM requeued) q) AS notified
    FROM requeued r`);

/**
 * Refreshes heartbeat_at of leases ($1 ids, $2 leases) and returns the pairs it did not find: the
 * leases rescued since. Normally nothing comes back, so a chunk costs one round trip and no rows.
 */
export const heartbeatLeases = statement('heartbeat_leases', `
  WITH beat AS (SELECT * FROM unnest($1::bigint[], $2::bigint[]) AS b(job_id, run_lease)),
  refreshed AS (
    UPDATE awa.active_leases l SET heartbeat_at = now()
      FROM beat b
     WHERE l.job_id = b.job_id AND l.run_lease = b.run_lease
    RETURNING l.job_id, l.run_lease
  )
  SELECT b.job_id::text, b.run_lease::text
    FROM beat b
   WHERE NOT EXISTS (SELECT FROM refreshed r WHERE r.job_id = b.job_id AND r.run_lease = b.run_lease)`);

/**
 * Run first in the heartbeat transaction. A custom plan, seeing hundreds of pairs, would hash-join
 * them against a sequential scan of all leases; the generic plan looks each pair up by primary key.
 */
export const heartbeatPlanMode = statement('heartbeat_plan_mode', `SET LOCAL plan_cache_mode = force_generic_plan`);

/**
 * Finalizes attempts as cancelled ($1 ids, $2 leases, $3 error text) after producer.cancel()
 * signalled their handlers. Fenced like completeJobs.
 */
export const cancelRunningJobs = statement('cancel_running_jobs', `
  WITH ${RELEASE_HELD_LEASES}
  UPDATE awa.jobs j
     SET state = 'cancelled', finalized_at = now(),
         ${appendError('$3::text')}
    FROM released r
   WHERE j.id = r.job_id AND j.run_lease = r.run_lease AND j.state = 'running'
  RETURNING j.id::text, j.run_lease::text`);
