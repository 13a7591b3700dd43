import { changeJobs } from './job-history.sql.js';
import { RELEASE_EVENTS } from './job-events.sql.js';
import { millis, statement } from './sql-statement.js';
import type { ClaimedJobRow } from './claim.sql.js';

/** A row of the flow claim: a claimed job, or (id null) the wait until the next attempt may start. */
export type FlowClaimRow = (ClaimedJobRow & { wait_ms: null }) | { id: null; wait_ms: number };

/**
 * The claim of a queue with flow control: awa.claim_flow (migration AwaFlowControl) claims like
 * claimJobs, within the queue's hold, rate limit ($6 attempts per $7 ms, 0: none) and key limit ($8
 * running attempts per concurrency key, 0: none). $9: added to the rate limit's window, the longest
 * a claimed job may take from its claim's send to its handler's entry (rateLogExtension), else 0.
 * Queues without flow control keep claimJobs.
 */
export const claimFlowJobs = statement<
  [
    queue: string,
    kinds: string[],
    limit: number,
    instanceId: string,
    deadlineMs: number,
    rateLimit: number,
    ratePeriodMs: number,
    keyConcurrency: number,
    bufferWaitMs: number,
  ],
  FlowClaimRow
>('claim_flow_jobs', `SELECT * FROM awa.claim_flow($1, $2::text[], $3, $4, $5, $6, $7, $8, $9)`);

/**
 * A handler asked to back off (job.rateLimit(ms) or RateLimitedError): gives attempt ($1 id, $2 run
 * lease) back without spending it and holds back ($3 ms) the claims of its queue, or with $5 (key
 * concurrency) those of its key alone. With $4 (the queue claims through claim_flow, which honours
 * holds) the job is available at once; otherwise it is scheduled for the end of the hold. A cancel
 * request ends it cancelled instead. Fenced on the lease; returns the job's new state.
 */
export const rateLimitJob = statement<
  [id: string, runLease: string, holdMs: number, flow: boolean, keyed: boolean],
  { id: string; state: string }
>(
  'rate_limit_job',
  `
  WITH released AS (
    DELETE FROM awa.active_leases l WHERE l.job_id = $1::bigint AND l.run_lease = $2::bigint
    RETURNING l.job_id, l.run_lease, l.cancel_requested
  ), ${changeJobs({
    from: 'released r',
    id: 'r.job_id',
    where: `j.run_lease = r.run_lease AND j.state = 'running'`,
    set: {
      state: `CASE WHEN r.cancel_requested THEN 'cancelled' WHEN $4 THEN 'available' ELSE 'scheduled' END`,
      attempt: 'CASE WHEN r.cancel_requested THEN j.attempt ELSE j.attempt - 1 END',
      run_at: `CASE WHEN r.cancel_requested OR $4 THEN j.run_at ELSE now() + ${millis('$3')} END`,
      finalized_at: 'CASE WHEN r.cancel_requested THEN now() END',
    },
    events: RELEASE_EVENTS,
  })}, requeued AS (
    SELECT id, queue, concurrency_key, state FROM finished
  ), held_queue AS (
    INSERT INTO awa.queues AS q (name, held_until)
    SELECT r.queue, now() + ${millis('$3')} FROM requeued r
     WHERE r.state <> 'cancelled' AND NOT ($5 AND r.concurrency_key IS NOT NULL)
    ON CONFLICT (name) DO UPDATE
      SET held_until = greatest(q.held_until, EXCLUDED.held_until), updated_at = now()
  ), held_key AS (
    UPDATE awa.flow_keys f SET held_until = greatest(f.held_until, now() + ${millis('$3')})
      FROM requeued r
     WHERE $5 AND r.state <> 'cancelled' AND f.queue = r.queue AND f.key = r.concurrency_key
  )
  SELECT r.id::text, r.state FROM requeued r`,
);
