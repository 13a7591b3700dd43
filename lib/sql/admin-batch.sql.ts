import { AWA_CANCEL_CHANNEL, AWA_JOBS_CHANNEL } from '../awa.constants.js';
import { DELETED_COLUMNS, RETRY_ASSIGNMENTS, RETRYABLE_STATES, restoreArchived } from './admin.sql.js';
import { filtered, type FilterSql } from './admin-filter.sql.js';
import { lockFlowKeys } from './flow-keys.sql.js';
import { changeJobs } from './job-history.sql.js';
import { appendError } from './sql-statement.js';
import { DELETED_EVENTS } from './job-events.sql.js';
import { deletedSource, resolveDependents } from './workflow.sql.js';

// The batches of QueueAdmin's bulk calls (retryJobs, cancelJobs, deleteJobs): each takes up to a
// batch size of the jobs matching a filter below a cursor, and says where the next one starts.

const WAITING_STATES = `('scheduled', 'available', 'retryable', 'waiting')`;

/** One batch's result: how many rows it looked at (fewer than the batch size: the last batch) and the lowest id. */
export interface BatchRow {
  picked: number;
  last_id: string | null;
}

/** The `picked` summary columns every batch returns. */
const PICKED = `(SELECT count(*) FROM picked)::int AS picked, (SELECT min(id) FROM picked)::text AS last_id`;

/**
 * One batch of retryJobs: up to $2 finished jobs matching the filter (from $3) with id <= $1, newest
 * first, locked with SKIP LOCKED and retried; their queues NOTIFYed. Each table gives its newest $2,
 * the batch is the newest $2 of those; jobs of awa.job_history move back into awa.jobs. A unique job
 * (one that would hold its key once available) is retried only if no other job holds its key now
 * (jobs_unique_idx), and only the newest of the batch's jobs of one key: the others are skipped,
 * counted in `skipped`, so the UPDATE raises no unique violation. (A job of that key committed by another transaction between
 * this statement's snapshot and its UPDATE still can: QueueAdmin runs the batch again.)
 * Key rows: see lockFlowKeys.
 */
export const retryBatch = (filter: FilterSql) =>
  filtered<[cursor: string, size: number, ...filter: unknown[]], BatchRow & RetryBatchRow>(
    'retry_batch',
    filter,
    () => `
  WITH live AS (
    SELECT id, unique_key, unique_states, false AS archived FROM awa.jobs
     WHERE id <= $1::bigint AND state IN ${RETRYABLE_STATES} AND ${filter.where(3)}
     ORDER BY id DESC LIMIT $2 FOR UPDATE SKIP LOCKED
  ), archive AS (
    SELECT id, unique_key, unique_states, true AS archived FROM awa.job_history
     WHERE id <= $1::bigint AND ${filter.where(3)}
     ORDER BY id DESC LIMIT $2 FOR UPDATE SKIP LOCKED
  ), picked AS (
    SELECT id, unique_key, archived, (unique_key IS NOT NULL AND 'available' = ANY (unique_states)) AS guarded
      FROM (SELECT * FROM live UNION ALL SELECT * FROM archive) c
     ORDER BY id DESC LIMIT $2
  ), free AS (
    SELECT DISTINCT ON (p.unique_key) p.id FROM picked p
     WHERE p.guarded
       AND NOT EXISTS (SELECT FROM awa.jobs o
                        WHERE o.unique_key = p.unique_key AND o.state = ANY (o.unique_states) AND o.id <> p.id)
     ORDER BY p.unique_key, p.id DESC
  ), updated AS (
    UPDATE awa.jobs j SET ${RETRY_ASSIGNMENTS} FROM picked p
     WHERE j.id = p.id AND NOT p.archived AND (NOT p.guarded OR p.id IN (SELECT id FROM free))
    RETURNING j.queue, j.concurrency_key
  ), ${restoreArchived('picked', '(NOT p.guarded OR p.id IN (SELECT id FROM free))')}, retried AS (
    SELECT * FROM updated UNION ALL SELECT * FROM restored
  ), keys_locked AS (${lockFlowKeys('retried')}
  )
  SELECT ${PICKED}, (SELECT count(*) FROM retried)::int AS changed,
         (SELECT count(*) FROM picked WHERE guarded)::int - (SELECT count(*) FROM free)::int AS skipped,
         ARRAY(SELECT DISTINCT queue FROM retried) AS queues,
         (SELECT count(pg_notify('${AWA_JOBS_CHANNEL}', r.queue)) FROM (SELECT DISTINCT queue FROM retried) r)::int
           AS notified`,
  );
export interface RetryBatchRow {
  changed: number;
  /** Unique jobs not retried: their key is held by another job, or by a newer job of the batch. */
  skipped: number;
  queues: string[];
}

/**
 * Stores a cancel request on the leases of the running jobs among `picked`, and NOTIFYs `awa_cancel`
 * for each. Locks only lease rows (like jobsSql.requestCancel), but many: a completion or heartbeat
 * holding some of them (locked in its batch's order) can deadlock with it; QueueAdmin runs the batch
 * that lost again, and the workers retry their writes. Placed right after `picked`: a lock wait then
 * shows it within the statement text pg_stat_activity keeps.
 */
const SIGNAL_RUNNING = `
  flagged AS (
    UPDATE awa.active_leases l SET cancel_requested = true
     WHERE l.job_id = ANY (ARRAY(SELECT id FROM picked WHERE state = 'running'))
    RETURNING l.job_id
  )`;
const SIGNALLED = `(SELECT count(pg_notify('${AWA_CANCEL_CHANNEL}', f.job_id::text)) FROM flagged f)::int AS signalled`;

/**
 * One batch of cancelJobs: up to $2 unfinished jobs matching the filter (from $4) with id <= $1,
 * newest first. Waiting ones are cancelled (error $3 appended), running ones get a cancel request.
 */
export const cancelBatch = (filter: FilterSql) =>
  filtered<[cursor: string, size: number, error: string, ...filter: unknown[]], BatchRow & CancelBatchRow>(
    'cancel_batch',
    filter,
    () => `
  WITH picked AS (
    SELECT id, state FROM awa.jobs
     WHERE id <= $1::bigint AND state IN ('scheduled', 'available', 'retryable', 'waiting', 'running')
       AND ${filter.where(4)}
     ORDER BY id DESC LIMIT $2
  ), ${SIGNAL_RUNNING}, waiting AS (
    SELECT id FROM awa.jobs
     WHERE id = ANY (ARRAY(SELECT id FROM picked WHERE state <> 'running')) AND state IN ${WAITING_STATES}
     FOR UPDATE SKIP LOCKED
  ), ${changeJobs({
    from: 'waiting w',
    id: 'w.id',
    set: { state: `'cancelled'`, finalized_at: 'now()', errors: appendError('$3::text') },
  })}, cancelled AS (
    SELECT id FROM finished
  )
  SELECT ${PICKED}, (SELECT count(*) FROM cancelled)::int AS cancelled, ${SIGNALLED}`,
  );
export interface CancelBatchRow {
  cancelled: number;
  signalled: number;
}

/**
 * One batch of deleteJobs: up to $2 jobs matching the filter (from $3) with id <= $1, newest first.
 * Those not running are deleted (SKIP LOCKED); running ones get a cancel request instead.
 */
export const deleteBatch = (filter: FilterSql) =>
  filtered<[cursor: string, size: number, ...filter: unknown[]], BatchRow & DeleteBatchRow>(
    'delete_batch',
    filter,
    () => `
  WITH picked AS (
    SELECT id, state FROM awa.all_jobs WHERE id <= $1::bigint AND ${filter.where(3)} ORDER BY id DESC LIMIT $2
  ), ${SIGNAL_RUNNING}, doomed AS (
    SELECT id FROM awa.jobs
     WHERE id = ANY (ARRAY(SELECT id FROM picked WHERE state <> 'running')) AND state <> 'running'
     FOR UPDATE SKIP LOCKED
  ), doomed_archive AS (
    SELECT id FROM awa.job_history WHERE id = ANY (ARRAY(SELECT id FROM picked WHERE state <> 'running'))
     FOR UPDATE SKIP LOCKED
  ), deleted AS (
    DELETE FROM awa.jobs j USING doomed d WHERE j.id = d.id RETURNING ${DELETED_COLUMNS}
  ), ${resolveDependents(deletedSource('deleted'))}, erased AS (
    DELETE FROM awa.job_history j USING doomed_archive d WHERE j.id = d.id RETURNING ${DELETED_COLUMNS}
  ), ${DELETED_EVENTS}
  SELECT ${PICKED}, ((SELECT count(*) FROM deleted) + (SELECT count(*) FROM erased))::int AS deleted, ${SIGNALLED}`,
  );
export interface DeleteBatchRow {
  deleted: number;
  signalled: number;
}
