import { AWA_JOBS_CHANNEL } from '../awa.constants.js';
import type { JobState } from '../interfaces/job.interface.js';
import { failChanges, millis, statement, withinIds, type SqlStatement } from './sql-statement.js';
import { changeJobs } from './job-history.sql.js';
import { lockFlowKeys } from './flow-keys.sql.js';
import { RESCUE_EVENTS } from './job-events.sql.js';

/**
 * $1..$6 of every rescue statement: the leader's queues with their retry base and cap ms, the
 * defaults for queues it does not know, and the batch size. Statement-specific parameters follow.
 */
export type RescueParams = [
  queues: string[],
  retryBaseMs: number[],
  retryCapMs: number[],
  defaultBaseMs: number,
  defaultCapMs: number,
  batchSize: number,
];

/** A rescued job and the state it was moved to. */
export interface RescuedRow {
  id: string;
  state: JobState;
  queue: string;
  kind: string;
}

/**
 * A rescue statement: RescueParams, then its own parameters from $7. A job is retried with the
 * settings of the instance that held its lease (its row's `settings`); the leader's serve only
 * when that row is gone.
 *
 * A rescue locks the chosen lease rows (SKIP LOCKED, so two leaders never take the same one),
 * deletes them, and moves each job, still fenced on (id, run_lease, running), through the same
 * retry/fail path as a failed attempt (a cancel-requested one ends cancelled). A completion racing
 * a rescue finds its lease gone.
 */
function rescue<P extends unknown[]>(
  name: string,
  pickLeases: string,
  errorExpr: string,
): SqlStatement<[...RescueParams, ...P], RescuedRow> {
  return statement<[...RescueParams, ...P], RescuedRow>(
    name,
    `
    WITH picked AS (
      ${pickLeases}
      LIMIT $6 FOR UPDATE SKIP LOCKED
    ), released AS (
      DELETE FROM awa.active_leases l USING picked p
       WHERE l.job_id = p.job_id AND l.run_lease = p.run_lease AND l.instance_id = p.instance_id
      RETURNING l.job_id, l.run_lease, l.instance_id, l.cancel_requested
    ), targets AS (
      SELECT r.job_id, r.run_lease, r.instance_id, r.cancel_requested,
             coalesce((i.settings #>> ARRAY['queues', j0.queue, 'retryBaseDelay'])::float8,
                      c.base_ms, $4::float8) AS base_ms,
             coalesce((i.settings #>> ARRAY['queues', j0.queue, 'retryMaxDelay'])::float8,
                      c.cap_ms, $5::float8) AS cap_ms
        FROM released r
        JOIN awa.jobs j0 ON j0.id = r.job_id AND ${withinIds('j0.id', 'job_id', 'released')}
        LEFT JOIN awa.instances i ON i.id = r.instance_id
        LEFT JOIN unnest($1::text[], $2::float8[], $3::float8[]) AS c(queue, base_ms, cap_ms) ON c.queue = j0.queue
    ), ${changeJobs({
      from: 'targets t',
      id: 't.job_id',
      where: `j.run_lease = t.run_lease AND j.state = 'running'`,
      set: failChanges(errorExpr, 't.base_ms', 't.cap_ms', 't.cancel_requested'),
      events: RESCUE_EVENTS,
    })}
    SELECT id::text, state, queue, kind FROM finished`,
  );
}

/** heartbeatStaleAfter of the instance holding lease `l`, or $7 (the leader's) if its row is gone. */
const OWNER_STALE_AFTER = `coalesce((SELECT (i.settings ->> 'heartbeatStaleAfter')::float8
                                       FROM awa.instances i WHERE i.id = l.instance_id), $7::float8)`;

/**
 * Leases whose heartbeat is older than their instance's heartbeatStaleAfter (or $7 ms); error text
 * $8. A lease is never heartbeated before its claim, so only leases claimed more than the smallest
 * of those ago qualify. Like every rescue, it reads awa.active_leases whole: the table holds only the
 * attempts in flight, and an index on it would cost every claimed job its entries (migration
 * AwaLeaseTableScans).
 */
export const rescueStaleHeartbeats = rescue<[staleAfterMs: number, error: string]>(
  'rescue_stale_heartbeats',
  `
  SELECT l.job_id, l.run_lease, l.instance_id FROM awa.active_leases l
   WHERE l.claimed_at < now() -
     ${millis(`least($7::float8, (SELECT min((settings ->> 'heartbeatStaleAfter')::float8) FROM awa.instances))`)}
     AND l.heartbeat_at < now() - ${millis(OWNER_STALE_AFTER)}
   ORDER BY l.claimed_at`,
  '$8::text',
);

/** Leases past their hard deadline; error text $7. */
export const rescueExpiredDeadlines = rescue<[error: string]>(
  'rescue_expired_deadlines',
  `
  SELECT job_id, run_lease, instance_id FROM awa.active_leases
   WHERE deadline_at < now()
   ORDER BY deadline_at`,
  '$7::text',
);

/** Leases held by the dead instances $7; the error is $8 followed by the instance id. */
export const rescueOrphanedLeases = rescue<[deadInstances: string[], errorPrefix: string]>(
  'rescue_orphaned_leases',
  `
  SELECT job_id, run_lease, instance_id FROM awa.active_leases
   WHERE instance_id = ANY($7::text[])`,
  `$8::text || t.instance_id`,
);

/** Makes up to $1 due scheduled/retryable jobs available, and NOTIFYs their queues. Key rows: see lockFlowKeys. */
export const promoteDueJobs = statement<[limit: number], { promoted: number; queues: number }>(
  'promote_due_jobs',
  `
  WITH due AS (
    SELECT id FROM awa.jobs
     WHERE state IN ('scheduled', 'retryable') AND run_at <= now()
     ORDER BY run_at LIMIT $1 FOR UPDATE SKIP LOCKED
  ), promoted AS (
    UPDATE awa.jobs j SET state = 'available' FROM due WHERE j.id = due.id RETURNING j.queue, j.concurrency_key
  ), keys_locked AS (${lockFlowKeys('promoted')}
  )
  SELECT count(*)::int AS promoted,
         (SELECT count(pg_notify('${AWA_JOBS_CHANNEL}', q.queue)) FROM (SELECT DISTINCT queue FROM promoted) q)::int
           AS queues
    FROM promoted`,
);

/**
 * Deletes up to $3 finished jobs still in awa.jobs (unique jobs holding their key; the others are in
 * awa.job_history, see HistoryRotationTask): completed ones finalized more than $1 ms ago and failed or
 * cancelled ones finalized more than $2 ms ago. A NULL retention keeps that kind forever.
 */
export const deleteFinishedJobs = statement<
  [completedRetentionMs: number | null, failedRetentionMs: number | null, limit: number]
>(
  'delete_finished_jobs',
  `
  WITH doomed AS (
    SELECT id FROM awa.jobs
     WHERE finalized_at < now() - ${millis('least($1::float8, $2::float8)')}
       AND ((state = 'completed' AND finalized_at < now() - ${millis('$1')})
         OR (state IN ('failed', 'cancelled') AND finalized_at < now() - ${millis('$2')}))
     ORDER BY finalized_at LIMIT $3
  )
  DELETE FROM awa.jobs j USING doomed WHERE j.id = doomed.id`,
);

/** A (queue, kind) pair with available jobs that no live instance handles, and their count. */
export interface UnhandledKindRow {
  queue: string;
  kind: string;
  count: number;
}

/**
 * Up to $2 (queue, kind) pairs that have available jobs and no live instance (row refreshed within
 * $1 ms) with a handler for that kind in that queue, with their counts. The pairs are found by
 * skipping through jobs_claim_kind_idx one (queue, kind) at a time, so handled kinds' backlogs are
 * never read; only the unhandled pairs are counted.
 */
export const findUnhandledKinds = statement<[staleAfterMs: number, limit: number], UnhandledKindRow>(
  'find_unhandled_kinds',
  `
  WITH RECURSIVE pairs AS (
    (SELECT queue, kind FROM awa.jobs WHERE state = 'available' ORDER BY queue, kind LIMIT 1)
    UNION ALL
    SELECT n.queue, n.kind FROM pairs p CROSS JOIN LATERAL (
      SELECT queue, kind FROM awa.jobs
       WHERE state = 'available' AND (queue, kind) > (p.queue, p.kind)
       ORDER BY queue, kind LIMIT 1
    ) n
  ), handled AS (
    SELECT h.key AS kind, h.value AS queue
      FROM awa.instances i CROSS JOIN LATERAL jsonb_each_text(i.handlers) h
     WHERE i.heartbeat_at >= now() - ${millis('$1')}
  ), unhandled AS (
    SELECT p.queue, p.kind FROM pairs p
     WHERE NOT EXISTS (SELECT 1 FROM handled h WHERE h.kind = p.kind AND h.queue = p.queue)
     ORDER BY p.queue, p.kind LIMIT $2
  )
  SELECT u.queue, u.kind,
         (SELECT count(*) FROM awa.jobs j WHERE j.state = 'available' AND j.queue = u.queue AND j.kind = u.kind)::int
           AS count
    FROM unhandled u
   ORDER BY u.queue, u.kind`,
);
