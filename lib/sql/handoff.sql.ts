import { AWA_HANDOFF_CHANNEL } from '../awa.constants.js';
import { millis, statement } from './sql-statement.js';
import { CLOCK_RUN_LEASE, claimedSelectList, claimedValueList, type ClaimedJobRow } from './claim.sql.js';

/**
 * Offers this idle worker ($2) of queue $1 for a handoff of one job of kinds $3, leased with
 * deadline $4 ms (0: none) (docs/handoff.md). One offer per worker: an offer made again only renews it.
 */
export const offerWorker = statement<[queue: string, instanceId: string, kinds: string[], deadlineMs: number]>(
  'offer_worker',
  `
  INSERT INTO awa.worker_offers (queue, instance_id, kinds, deadline_ms) VALUES ($1, $2, $3::text[], $4)
  ON CONFLICT (queue, instance_id) DO UPDATE SET kinds = EXCLUDED.kinds, deadline_ms = EXCLUDED.deadline_ms,
    offered_at = now()`,
);

/** Withdraws the offer of worker $2 of queue $1 (shutdown). */
export const withdrawOffer = statement<[queue: string, instanceId: string]>(
  'withdraw_offer',
  `DELETE FROM awa.worker_offers WHERE queue = $1 AND instance_id = $2`,
);

/** enqueue()'s insert with a handoff: the new job's id, and whether a worker took it. */
export interface HandedOffRow {
  id: string;
  handed: boolean;
}

/** The parameters of enqueue()'s insert with a handoff (insertHandedOff, insertHandedOffFlushedLater). */
type HandedOffParams = [
  kind: string,
  queue: string,
  args: string,
  priority: number,
  maxAttempts: number,
  tags: string | null,
  traceparent: string | null,
];

/**
 * The session setting a handed insert committed asynchronously sets ('on'), until flushHandedOff
 * has made it durable. Session-level, so it outlives the insert's transaction (and is reverted with it).
 */
const FLUSH_DUE = 'awa.handoff_flush_due';

/**
 * The text of insertHandedOff, or, `flushedLater`, the same insert whose commit does not wait for
 * the write-ahead log's flush when it hands the job (synchronous_commit off for that transaction only),
 * and that leaves FLUSH_DUE set for flushHandedOff.
 */
const handedOffText = (flushedLater: boolean) => `
  WITH offer AS (
    DELETE FROM awa.worker_offers o
     WHERE (o.queue, o.instance_id) = (
       SELECT f.queue, f.instance_id FROM awa.worker_offers f
        WHERE f.queue = $2 AND $1 = ANY(f.kinds)
          AND NOT EXISTS (SELECT FROM awa.queues q
                           WHERE q.name = $2 AND (q.paused_at IS NOT NULL OR q.held_until > now()))
        LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING o.instance_id, o.deadline_ms
  ), job AS (
    INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, state, attempt, run_lease, attempted_at, tags,
                          traceparent)
    SELECT $1, $2, $3::jsonb, $4, $5,
           CASE WHEN o.instance_id IS NULL THEN 'available' ELSE 'running' END,
           CASE WHEN o.instance_id IS NULL THEN 0 ELSE 1 END,
           CASE WHEN o.instance_id IS NULL THEN 0 ELSE ${CLOCK_RUN_LEASE} END,
           CASE WHEN o.instance_id IS NOT NULL THEN now() END,
           CASE WHEN jsonb_typeof($6::jsonb) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text($6::jsonb))
                ELSE '{}' END,
           $7
      FROM (SELECT) AS one LEFT JOIN offer o ON true
    RETURNING id, kind, queue, args, attempt, max_attempts, priority, run_lease, created_at, run_at, traceparent,
              workflow_id
  ), leased AS (
    INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, deadline_at, claimed_at)
    SELECT j.id, j.run_lease, o.instance_id, now(), CASE WHEN o.deadline_ms > 0 THEN now() + ${millis('o.deadline_ms')} END,
           now()
      FROM job j CROSS JOIN offer o
  )
  SELECT j.id::text, o.instance_id IS NOT NULL AS handed
    FROM job j LEFT JOIN offer o ON true
    LEFT JOIN LATERAL (
      SELECT pg_notify('${AWA_HANDOFF_CHANNEL}', json_build_object(
        'i', o.instance_id, 'q', j.queue,
        'r', json_build_array(${claimedValueList('j.')}))::text)${
          flushedLater
            ? `,
             set_config('synchronous_commit', 'off', true), set_config('${FLUSH_DUE}', 'on', false)`
            : ''
        }
       WHERE o.instance_id IS NOT NULL
    ) AS sent ON true`;

/**
 * Inserts one job (kind $1, queue $2, args $3, priority $4, max_attempts $5, tags $6 as a JSON array
 * or null, traceparent $7) that runs now, and hands it to an idle worker of its queue when one has
 * offered for its kind (offerWorker) and the queue is neither paused nor held: the offer is taken
 * (deleted; SKIP LOCKED, so concurrent enqueues take different offers), the job goes in `running`
 * with its first attempt, a run lease from the database clock (as a claim's, see NEXT_RUN_LEASE)
 * and a lease row of the offer's instance, and that instance is sent the job on AWA_HANDOFF_CHANNEL:
 * the NOTIFY is delivered at commit, once the job is the worker's. Without an offer the job goes in
 * `available`, as insertJobs would insert it (its trigger wakes the queue's workers).
 */
export const insertHandedOff = statement<HandedOffParams, HandedOffRow>('insert_handed_off', handedOffText(false));

/**
 * insertHandedOff whose handed job is made durable by the next statement on the same session
 * (flushHandedOff, sent behind it in one round trip, docs/handoff.md): its commit does not wait for
 * the write-ahead log's flush when it hands the job, so the worker hears of the job one flush
 * sooner. A job inserted `available` commits as insertHandedOff's does.
 */
export const insertHandedOffFlushedLater = statement<HandedOffParams, HandedOffRow>(
  'insert_handed_off_flushed_later',
  handedOffText(true),
);

/**
 * After insertHandedOffFlushedLater on the same session: when it handed its job (FLUSH_DUE is set),
 * writes a transactional logical message, whose synchronous commit flushes the write-ahead log up
 * to itself, and so past the job's commit before it (the log is flushed in order); else writes
 * nothing and waits for nothing. `flushed`: whether it flushed. (The setting is read in a sub-select
 * kept apart by OFFSET 0, so before the outer list clears it.)
 */
export const flushHandedOff = statement<[], { flushed: boolean }>(
  'flush_handed_off',
  `
  SELECT due.flushed, set_config('${FLUSH_DUE}', '', false) AS cleared
    FROM (SELECT CASE WHEN current_setting('${FLUSH_DUE}', true) = 'on'
                      THEN pg_logical_emit_message(true, 'awa.handoff', '') IS NOT NULL
                      ELSE false END AS flushed
          OFFSET 0) AS due`,
);

/**
 * The jobs handed to instance $1 (running, leased to it, attempted in their insert's transaction: a
 * claim is always a later one) as claimed rows. After its session reconnects, an instance runs those
 * it does not know: their notification may have been sent while it was not listening. Reads the
 * lease table by instance: it holds only running attempts, and this runs once per reconnect.
 */
export const handedOffJobsOf = statement<[instanceId: string], ClaimedJobRow>(
  'handed_off_jobs_of',
  `
  SELECT ${claimedSelectList('j.')}, j.queue
    FROM awa.active_leases l JOIN awa.jobs j ON j.id = l.job_id AND j.run_lease = l.run_lease
   WHERE l.instance_id = $1 AND j.state = 'running' AND j.attempted_at = j.created_at`,
);
