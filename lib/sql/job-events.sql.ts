import { millis, msAgo, statement } from './sql-statement.js';

/*
 * Durable job events (migration AwaJobEvents, docs/durable-events.md): written by the statement that
 * changes the job, read by each subscribed group after its position, in (tx, id) order.
 */

/** The event of each new state, for the rows `f` a statement changed (a text expression). */
export const stateEvent = (state = 'f.state') =>
  `CASE ${state} WHEN 'completed' THEN 'completed' WHEN 'failed' THEN 'failed' WHEN 'cancelled' THEN 'cancelled'
     WHEN 'retryable' THEN 'retrying' WHEN 'scheduled' THEN 'snoozed' WHEN 'available' THEN 'released' END`;

/** The default events of a changed row `f`: the one of its new state. */
export const STATE_EVENTS = `ARRAY[${stateEvent()}]`;
/** A rescue's events: `rescued`, then the one of the state it moved the job to (so `failed` sees every failure). */
export const RESCUE_EVENTS = `ARRAY['rescued', ${stateEvent()}]`;
/** An attempt given back without a verdict (a rate limit): `released`, whichever state it waits in. */
export const RELEASE_EVENTS = `ARRAY[CASE WHEN f.state = 'cancelled' THEN 'cancelled' ELSE 'released' END]`;

/** The last error of a failure, retry, cancel or rescue; nothing for the other events. */
const ERROR_PAYLOAD = `CASE WHEN e.event IN ('failed', 'retrying', 'cancelled', 'rescued')
                              THEN jsonb_build_object('error', f.errors -> -1 -> 'error') END`;

/**
 * The body of a CTE that writes the events `events` (a text[] expression over `f`) of the rows `rows`
 * (with id, kind, queue, state, attempt, and errors unless `payload` is given) into awa.job_events,
 * each one only if some group subscribes to it. The uncorrelated EXISTS is a one-time filter: with no
 * subscription at all the plan stops there, before it reads a row, so a statement pays one probe of an
 * empty table.
 */
export const recordJobEvents = (rows: string, events = STATE_EVENTS, payload = ERROR_PAYLOAD) => `
    INSERT INTO awa.job_events (job_id, event, kind, queue, state, attempt, payload)
    SELECT f.id, e.event, f.kind, f.queue, f.state, f.attempt, ${payload}
      FROM ${rows} f CROSS JOIN LATERAL unnest(${events}) WITH ORDINALITY AS e(event, n)
     WHERE EXISTS (SELECT FROM awa.event_subscriptions)
       AND EXISTS (SELECT FROM awa.event_subscriptions s
                    WHERE s.event = e.event AND s.queue IN ('*', f.queue) AND f.kind LIKE s.kind_like)
     ORDER BY f.id, e.n`;

/**
 * The CTE changeJobs appends after `finished` (see changeJobs' `events`). It reads `stayed` and `moved`
 * (materialized anyway, as data-modifying CTEs) rather than `finished`, which the statement's own
 * SELECT then still reads alone, and so inlines as before.
 */
export const jobEventsAfterChange = (events?: string) => `events_written AS (${recordJobEvents(
  '(SELECT * FROM stayed UNION ALL SELECT * FROM moved)',
  events,
)}
  )`;

/** Whether event row `e` is one that group `group` (an expression) subscribes to. */
const SUBSCRIBED = (group: string) => `EXISTS (SELECT FROM awa.event_subscriptions s
   WHERE s."group" = ${group} AND s.event = e.event AND s.queue IN ('*', e.queue) AND e.kind LIKE s.kind_like)`;

/** Events of transactions older than every running one: none can commit behind them any more. */
const SETTLED = `e.tx < pg_snapshot_xmin(pg_current_snapshot())`;

/**
 * Stores group $1's subscriptions (rows of $2 events, $3 kind patterns, $4 LIKE patterns, $5 queues;
 * '*' any), replacing those it had, and creates its position at the present (the xmin of this
 * snapshot: every event not yet settled is after it) if it has none.
 */
export const storeSubscriptions = statement<
  [group: string, events: string[], kinds: string[], kindLikes: string[], queues: string[]]
>(
  'events_store_subscriptions',
  `
  WITH wanted AS (
    SELECT * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS w(event, kind, kind_like, queue)
  ), dropped AS (
    DELETE FROM awa.event_subscriptions s
     WHERE s."group" = $1
       AND NOT EXISTS (SELECT FROM wanted w WHERE w.event = s.event AND w.kind = s.kind AND w.queue = s.queue)
  ), stored AS (
    INSERT INTO awa.event_subscriptions ("group", event, kind, kind_like, queue)
    SELECT $1, event, kind, kind_like, queue FROM wanted
    ON CONFLICT ("group", event, kind, queue) DO UPDATE SET kind_like = EXCLUDED.kind_like, updated_at = now()
  )
  INSERT INTO awa.event_group_positions ("group", position_tx) VALUES ($1, pg_snapshot_xmin(pg_current_snapshot()))
  ON CONFLICT ("group") DO NOTHING`,
);

/** A group's position: the last event it acknowledged (or passed), as (tx, id). */
export interface GroupPositionRow {
  position_tx: string;
  position_id: string;
  failures: number;
  /** How long ago its next event last failed, in ms; null when it did not. */
  failed_ms_ago: number | null;
}

/**
 * Takes (or renews) the lease of group $1 for holder $2, for $3 ms: when nobody holds it, $2 holds it,
 * or the holder's lease ran out. Returns the group's position; nothing when another holds it.
 */
export const claimGroup = statement<[group: string, holder: string, leaseMs: number], GroupPositionRow>(
  'events_claim_group',
  `
  UPDATE awa.event_group_positions
     SET holder = $2, lease_until = now() + ${millis('$3')}, updated_at = now()
   WHERE "group" = $1 AND (holder IS NULL OR holder = $2 OR lease_until < now())
  RETURNING position_tx::text, position_id::text, failures,
            (extract(epoch FROM now() - failed_at) * 1000)::float8 AS failed_ms_ago`,
);

/**
 * Renews group $1's lease for $3 ms, only if holder $2 still holds it: unlike claimGroup, it never
 * takes a group that a replay cleared or another instance took over. Returns a row when it did.
 */
export const renewGroup = statement<[group: string, holder: string, leaseMs: number], { renewed: boolean }>(
  'events_renew_group',
  `
  UPDATE awa.event_group_positions SET lease_until = now() + ${millis('$3')}, updated_at = now()
   WHERE "group" = $1 AND holder = $2
  RETURNING true AS renewed`,
);

/** A stored event, as read by a group. */
export interface JobEventRow {
  id: string;
  tx: string;
  job_id: string;
  event: string;
  kind: string;
  queue: string;
  state: string;
  attempt: number;
  at: Date;
  payload: Record<string, unknown> | null;
  /** Whether group $1 subscribes to it; the others are only passed over. */
  matched: boolean;
}

/**
 * The next $4 settled events after position ($2 tx, $3 id), in order, each marked with whether group
 * $1 subscribes to it: the group handles those and moves past the others. A scan of the primary key.
 */
export const readGroupEvents = statement<[group: string, tx: string, id: string, limit: number], JobEventRow>(
  'events_read_group',
  `
  SELECT e.id::text, e.tx::text, e.job_id::text, e.event, e.kind, e.queue, e.state, e.attempt, e.at, e.payload,
         ${SUBSCRIBED('$1')} AS matched
    FROM awa.job_events e
   WHERE (e.tx, e.id) > ($2::xid8, $3::bigint) AND ${SETTLED}
   ORDER BY e.tx, e.id
   LIMIT $4`,
);

/**
 * Moves group $1's position to ($3 tx, $4 id) and renews the lease for $5 ms, if holder $2 still holds
 * it (a replay or a takeover clears or replaces the holder). Returns a row when it did.
 */
export const ackGroup = statement<
  [group: string, holder: string, tx: string, id: string, leaseMs: number],
  { acked: boolean }
>(
  'events_ack_group',
  `
  UPDATE awa.event_group_positions
     SET position_tx = $3::xid8, position_id = $4::bigint, failures = 0, last_error = NULL, failed_at = NULL,
         lease_until = now() + ${millis('$5')}, updated_at = now()
   WHERE "group" = $1 AND holder = $2
  RETURNING true AS acked`,
);

/** Counts a failed delivery of group $1's next event (error $3), if holder $2 holds it; returns the count. */
export const recordGroupFailure = statement<[group: string, holder: string, error: string], { failures: number }>(
  'events_record_group_failure',
  `
  UPDATE awa.event_group_positions
     SET failures = failures + 1, last_error = left($3, 2000), failed_at = now(), updated_at = now()
   WHERE "group" = $1 AND holder = $2
  RETURNING failures`,
);

/** Gives group $1's lease up, if holder $2 holds it (on shutdown): another instance takes it at once. */
export const releaseGroup = statement<[group: string, holder: string]>(
  'events_release_group',
  `
  UPDATE awa.event_group_positions SET holder = NULL, lease_until = NULL, updated_at = now()
   WHERE "group" = $1 AND holder = $2`,
);

/**
 * Moves group $1 back (or on) to just before its first stored event at or after $2 (to the present
 * when there is none), and clears its holder, whose next acknowledgement then fails and which reads
 * again from there. Returns the time of that first event, null if none.
 */
export const replayGroup = statement<[group: string, from: Date], { first_at: Date | null }>(
  'events_replay_group',
  `
  WITH first AS (
    SELECT e.tx, e.id, e.at FROM awa.job_events e WHERE e.at >= $2 AND ${SUBSCRIBED('$1')} ORDER BY e.tx, e.id LIMIT 1
  ), moved AS (
    UPDATE awa.event_group_positions p
       SET position_tx = coalesce((SELECT tx FROM first), pg_snapshot_xmin(pg_current_snapshot())),
           position_id = coalesce((SELECT id - 1 FROM first), 0),
           holder = NULL, lease_until = NULL, failures = 0, last_error = NULL, failed_at = NULL, updated_at = now()
     WHERE p."group" = $1
    RETURNING p."group"
  )
  SELECT (SELECT at FROM first) AS first_at FROM moved`,
);

/**
 * Moves group $1 past its next settled subscribed event (one whose handler keeps throwing), clearing its
 * failures and holder like a replay. Returns that event's id, nothing if the group has none waiting.
 */
export const skipGroupEvent = statement<[group: string], { skipped_id: string }>(
  'events_skip_group_event',
  `
  WITH next AS (
    SELECT e.tx, e.id FROM awa.job_events e, awa.event_group_positions p
     WHERE p."group" = $1 AND (e.tx, e.id) > (p.position_tx, p.position_id) AND ${SETTLED} AND ${SUBSCRIBED('$1')}
     ORDER BY e.tx, e.id LIMIT 1
  )
  UPDATE awa.event_group_positions p
     SET position_tx = n.tx, position_id = n.id, holder = NULL, lease_until = NULL, failures = 0, last_error = NULL,
         failed_at = NULL, updated_at = now()
    FROM next n
   WHERE p."group" = $1
  RETURNING n.id::text AS skipped_id`,
);

/** Forgets group $1: its position and subscriptions (its events are then written for nobody). */
export const dropGroup = statement<[group: string], { dropped: boolean }>(
  'events_drop_group',
  `
  WITH unsubscribed AS (
    DELETE FROM awa.event_subscriptions WHERE "group" = $1
  )
  DELETE FROM awa.event_group_positions WHERE "group" = $1 RETURNING true AS dropped`,
);

/** Whether group $1 has a position in this database (JobEventGroups.skip finds the module of a group). */
export const groupStored = statement<[group: string], { stored: boolean }>(
  'events_group_stored',
  `SELECT true AS stored FROM awa.event_group_positions WHERE "group" = $1`,
);

/** A group's position and lag, for the dashboard and telemetry. */
export interface GroupLagRow {
  group: string;
  position_tx: string;
  position_id: string;
  holder: string | null;
  lease_until: Date | null;
  failures: number;
  last_error: string | null;
  /** Subscribed events after the position, counted up to $1. */
  lag_events: number;
  /** Age of the oldest of them in ms (see msAgo), 0 if none. */
  lag_ms: number;
}

/** Every group's position and lag (events counted up to $1). */
export const groupLag = statement<[cap: number], GroupLagRow>(
  'events_group_lag',
  `
  SELECT p."group", p.position_tx::text, p.position_id::text, p.holder, p.lease_until, p.failures, p.last_error,
         (SELECT count(*) FROM (
            SELECT FROM awa.job_events e
             WHERE (e.tx, e.id) > (p.position_tx, p.position_id) AND ${SUBSCRIBED('p."group"')} LIMIT $1) c)::int
           AS lag_events,
         coalesce((SELECT ${msAgo('e.at')} FROM awa.job_events e
                    WHERE (e.tx, e.id) > (p.position_tx, p.position_id) AND ${SUBSCRIBED('p."group"')}
                    ORDER BY e.tx, e.id LIMIT 1), 0)::float8 AS lag_ms
    FROM awa.event_group_positions p
   ORDER BY p."group"`,
);

/**
 * Deletes up to $2 events older than $1 ms that every group has passed, oldest first (job_events_at_idx).
 * With no group at all, every event older than $1 ms. Deleted by ctid (events are never updated): a
 * join back on the key would be planned as a hash join over the whole table.
 */
export const deleteExpiredEvents = statement<[retentionMs: number, limit: number]>(
  'events_delete_expired',
  `
  WITH doomed AS (
    SELECT e.ctid FROM awa.job_events e
     WHERE e.at < now() - ${millis('$1')}
       AND (e.tx, e.id) <= ALL (SELECT position_tx, position_id FROM awa.event_group_positions)
     ORDER BY e.at LIMIT $2
  )
  DELETE FROM awa.job_events WHERE ctid = ANY (ARRAY(SELECT ctid FROM doomed))`,
);

/** The CTE of an admin delete: the `deleted` events of its CTEs `deleted` and `erased` (jobs of either table). */
export const DELETED_EVENTS = `deleted_events AS (${recordJobEvents(
  '(SELECT * FROM deleted UNION ALL SELECT * FROM erased)',
  `ARRAY['deleted']`,
  'NULL::jsonb',
)}
  )`;
