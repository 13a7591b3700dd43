import { AWA_JOBS_CHANNEL } from '../awa.constants.js';
import { millis, statement } from './sql-statement.js';

/**
 * A CTE that locks the key rows of `rows` (a FROM item with columns queue and concurrency_key: the
 * jobs a statement made available, or the leases it deleted) in (queue, key) order, the order in which
 * the lease-deletion trigger and the claim lock them, creating missing ones. Without it, the row
 * trigger that marks a key waiting when its job becomes available (jobs_flow_available) would lock
 * them in the order of the statement's rows, and deadlock with a completion over the same keys. An
 * unreferenced data-modifying CTE runs to completion before the statement's AFTER triggers fire, so
 * they find every lock taken. ON CONFLICT DO UPDATE ... WHERE false locks the row and changes nothing.
 */
export const lockFlowKeys = (rows: string) => `
    INSERT INTO awa.flow_keys AS f (queue, key)
    SELECT DISTINCT r.queue, r.concurrency_key FROM ${rows} r WHERE r.concurrency_key IS NOT NULL ORDER BY 1, 2
    ON CONFLICT (queue, key) DO UPDATE SET has_waiting = f.has_waiting WHERE false`;

/**
 * A key row of awa.flow_keys (alias f) that serves no purpose any more: nothing running, nothing
 * waiting, no hold in force, no per-key limit (user configuration), not served for $1 ms. Nothing
 * waiting is checked on the jobs too (one probe of jobs_flow_idx per candidate), not only on the
 * flag: a key's state is never deleted while it has an available job.
 */
const IDLE_KEY = `f.running = 0 AND NOT f.has_waiting AND f.max_running IS NULL
  AND (f.held_until IS NULL OR f.held_until <= now()) AND f.last_claimed_at < now() - ${millis('$1')}
  AND NOT EXISTS (SELECT FROM awa.jobs j WHERE j.state = 'available' AND j.queue = f.queue AND j.concurrency_key = f.key)`;

/**
 * Deletes up to $2 idle key rows (IDLE_KEY, idle for $1 ms). The candidates are locked SKIP LOCKED
 * (a claim or trigger holding one is left alone), then deleted by their locked row version's ctid,
 * the conditions checked again on it: a row changed after the statement's snapshot is not visible
 * at that ctid, and stays. Nothing is lost: a key's running count is never 0 while it has a lease,
 * and a job of the key that becomes available re-creates its row (the triggers' INSERT ... ON
 * CONFLICT waits for this lock, then inserts). No index serves the scan (the ready index holds keys
 * with waiting jobs only): one pass over flow_keys, which this statement keeps to the keys of the
 * last grace period and the configured ones, stopping at $2 rows (no ORDER BY); the delete is a
 * TID scan.
 */
export const deleteIdleFlowKeys = statement<[graceMs: number, limit: number]>(
  'delete_idle_flow_keys',
  `
  DELETE FROM awa.flow_keys f
   WHERE f.ctid = ANY (ARRAY(SELECT f.ctid FROM awa.flow_keys f WHERE ${IDLE_KEY} LIMIT $2 FOR UPDATE SKIP LOCKED))
     AND ${IDLE_KEY}`,
);

/**
 * Sets the running-attempt limit of key $2 of queue $1 to $3, or with $3 NULL gives it back the
 * queue's keyConcurrency. `saturated` (the key is out of the claim's ready index) follows at once:
 * set when running reaches the new limit, cleared when it does not, or with NULL (the queue's limit
 * is the claim's parameter, unknown here: the next claim of the key sets the flag again if it is
 * full). A key that may run more and has waiting jobs NOTIFYs its queue's workers. With $3 NULL a
 * key without a row gets none: it would only have the default.
 */
export const setKeyLimit = statement<[queue: string, key: string, limit: number | null], { notified: number }>(
  'set_key_limit',
  `
  WITH reset AS (
    UPDATE awa.flow_keys f SET max_running = NULL, saturated = false
     WHERE $3::int IS NULL AND f.queue = $1::text AND f.key = $2::text
    RETURNING f.running, f.max_running, f.has_waiting
  ), limited AS (
    INSERT INTO awa.flow_keys AS f (queue, key, max_running, saturated)
    SELECT $1::text, $2::text, $3::int, $3::int = 0 WHERE $3::int IS NOT NULL
    ON CONFLICT (queue, key) DO UPDATE
      SET max_running = EXCLUDED.max_running, saturated = f.running >= EXCLUDED.max_running
    RETURNING f.running, f.max_running, f.has_waiting
  ), freed AS (
    SELECT 1 FROM (SELECT * FROM reset UNION ALL SELECT * FROM limited) c
     WHERE c.has_waiting AND (c.max_running IS NULL OR c.running < c.max_running)
  )
  SELECT (SELECT count(pg_notify('${AWA_JOBS_CHANNEL}', $1::text)) FROM freed)::int AS notified`,
);

export interface FlowKeyRow {
  key: string;
  running: number;
  has_waiting: boolean;
  max_running: number | null;
  /** The key's hold, if still in force. */
  held_until: Date | null;
  /** Null when never served. */
  last_claimed_at: Date | null;
}

/** Up to $3 keys of queue $1 after key $2 ('' for the first page), by key: a range of flow_keys_pkey. */
export const listFlowKeys = statement<[queue: string, after: string, limit: number], FlowKeyRow>(
  'list_flow_keys',
  `
  SELECT f.key, f.running, f.has_waiting, f.max_running,
         CASE WHEN f.held_until > now() THEN f.held_until END AS held_until,
         CASE WHEN f.last_claimed_at > '-infinity' THEN f.last_claimed_at END AS last_claimed_at
    FROM awa.flow_keys f
   WHERE f.queue = $1 AND f.key > $2
   ORDER BY f.key LIMIT $3`,
);
