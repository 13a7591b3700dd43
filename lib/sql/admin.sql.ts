import { AWA_CANCEL_CHANNEL, AWA_CONTROL_CHANNEL, AWA_JOBS_CHANNEL } from '../awa.constants.js';
import type { JobState } from '../interfaces/job.interface.js';
import { JOB_COLUMNS, type JobRow } from './jobs.sql.js';
import { appendError, statement, type SqlStatement } from './sql-statement.js';
import { changeJobs } from './job-history.sql.js';
import { JOB_TABLE_COLUMNS, jobRowAfter } from './job-row.sql.js';
import { lockFlowKeys } from './flow-keys.sql.js';
import { deletedSource, resolveDependents } from './workflow.sql.js';
import { DELETED_EVENTS } from './job-events.sql.js';

/** What the admin service's statements over a filter are built from (see lib/admin/job-filter.ts). */
export interface FilterSql {
  /** Names the fragments present; part of the statement name, so one text per name. */
  readonly key: string;
  /** Fixed fragments joined by AND, their values parameters from $first (after the statement's own). */
  where(first: number): string;
}

/** The highest bigint: the cursor of a first page or batch (`id <= cursor`). */
export const FIRST_CURSOR = '9223372036854775807';

/**
 * A finished job back to `available` with a fresh attempt budget (attempt 0, max_attempts kept):
 * its errors stay, its lifecycle fields restart.
 */
const RETRY_CHANGES = {
  state: `'available'`,
  attempt: '0',
  run_at: 'now()',
  finalized_at: 'NULL::timestamptz',
  snoozes: '0',
  progress: 'NULL::jsonb',
  output: 'NULL::jsonb',
  shutdown_releases: '0',
};
const RETRY_ASSIGNMENTS = Object.entries(RETRY_CHANGES)
  .map(([column, expr]) => `${column} = ${expr}`)
  .join(', ');

/**
 * CTEs `unarchived` and `restored`: the jobs of awa.job_history among `picked` (rows with id and
 * archived) for which `also` holds go back into awa.jobs, same id, retried; `restored` returns their
 * queue and concurrency_key. awa.jobs' insert triggers NOTIFY their queues and mark their keys.
 */
const restoreArchived = (picked: string, also = 'true') => `unarchived AS (
    DELETE FROM awa.job_history j USING ${picked} p WHERE j.id = p.id AND p.archived AND ${also}
    RETURNING ${jobRowAfter(RETRY_CHANGES)}
  ), restored AS (
    INSERT INTO awa.jobs (${JOB_TABLE_COLUMNS.join(', ')}) SELECT * FROM unarchived
    RETURNING queue, concurrency_key
  )`;

/** Job $1 (one row at most), locked, from either table; `archived`: it is in awa.job_history. */
const LOCK_TARGET = `live_target AS (
    SELECT id, state, false AS archived FROM awa.jobs WHERE id = $1::bigint FOR UPDATE
  ), archived_target AS (
    SELECT id, state, true AS archived FROM awa.job_history WHERE id = $1::bigint FOR UPDATE
  ), target AS (
    SELECT * FROM live_target UNION ALL SELECT * FROM archived_target
  )`;

/**
 * What a delete returns of each job: its id, what its `deleted` event records (DELETED_EVENTS), and its
 * workflow (resolveDependents).
 */
const DELETED_COLUMNS = 'j.id, j.kind, j.queue, j.state, j.attempt, j.workflow_id';

const RETRYABLE_STATES = `('completed', 'failed', 'cancelled')`;
const WAITING_STATES = `('scheduled', 'available', 'retryable', 'waiting')`;

/**
 * Pauses queue $1 (a row in awa.queues; an earlier pause keeps its time) and NOTIFYs `awa_control`.
 * Claims read the pause themselves (see workerSql.claimJobs), so it holds from this commit on.
 */
export const pauseQueue = statement<[name: string], { notified: number }>(
  'admin_pause_queue',
  `
  WITH paused AS (
    INSERT INTO awa.queues AS q (name, paused_at) VALUES ($1, now())
    ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(q.paused_at, now()), updated_at = now()
    RETURNING q.name
  )
  SELECT count(pg_notify('${AWA_CONTROL_CHANNEL}', 'pause:' || name))::int AS notified FROM paused`,
);

/** Resumes queue $1 and NOTIFYs `awa_control`, so that every instance claims from it at once. */
export const resumeQueue = statement<[name: string], { resumed: number; notified: number }>(
  'admin_resume_queue',
  `
  WITH resumed AS (
    UPDATE awa.queues SET paused_at = NULL, updated_at = now() WHERE name = $1 AND paused_at IS NOT NULL
    RETURNING name
  )
  SELECT (SELECT count(*) FROM resumed)::int AS resumed,
         (SELECT count(pg_notify('${AWA_CONTROL_CHANNEL}', 'resume:' || $1::text)))::int AS notified`,
);

/**
 * Retries job $1 if it is finished: back to available (see RETRY_CHANGES), its queue NOTIFYed; a job
 * in awa.job_history moves back into awa.jobs with its id. Returns its state before, and its queue
 * if it was retried; nothing for an unknown id. A unique job whose key another job holds now fails
 * with a unique violation on jobs_unique_idx.
 */
export const retryJob = statement<[id: string], { state: JobState; queue: string | null; notified: number }>(
  'admin_retry_job',
  `
  WITH ${LOCK_TARGET}, updated AS (
    UPDATE awa.jobs j SET ${RETRY_ASSIGNMENTS}
      FROM target t WHERE j.id = t.id AND NOT t.archived AND t.state IN ${RETRYABLE_STATES}
    RETURNING j.queue
  ), ${restoreArchived('target')}, retried AS (
    SELECT queue FROM updated UNION ALL SELECT queue FROM restored
  )
  SELECT t.state, (SELECT queue FROM retried) AS queue,
         (SELECT count(pg_notify('${AWA_JOBS_CHANNEL}', queue)) FROM retried)::int AS notified
    FROM target t`,
);

/** Another job that holds the unique key of job $1 now (in one of its blocking states). */
export const uniqueHolder = statement<[id: string], { id: string }>(
  'admin_unique_holder',
  `
  SELECT o.id::text FROM awa.all_jobs j
    JOIN awa.jobs o ON o.unique_key = j.unique_key AND o.state = ANY (o.unique_states) AND o.id <> j.id
   WHERE j.id = $1::bigint
   LIMIT 1`,
);

/**
 * Deletes job $1 unless it is running, from whichever table holds it. Returns its state and whether
 * it was deleted; nothing if unknown.
 */
export const deleteJob = statement<[id: string], { state: JobState; deleted: boolean }>(
  'admin_delete_job',
  `
  WITH ${LOCK_TARGET}, deleted AS (
    DELETE FROM awa.jobs j USING target t WHERE j.id = t.id AND NOT t.archived AND t.state <> 'running'
    RETURNING ${DELETED_COLUMNS}
  ), ${resolveDependents(deletedSource('deleted'))}, erased AS (
    DELETE FROM awa.job_history j USING target t WHERE j.id = t.id AND t.archived RETURNING ${DELETED_COLUMNS}
  ), ${DELETED_EVENTS}
  SELECT t.state, EXISTS (SELECT FROM deleted) OR EXISTS (SELECT FROM erased) AS deleted FROM target t`,
);

/** Statements over a filter: one text per filter shape, named after it, built once. */
const built = new Map<string, SqlStatement>();
function filtered<P extends unknown[], R>(name: string, filter: FilterSql, text: () => string): SqlStatement<P, R> {
  const full = `admin_${name}_${filter.key}`;
  let found = built.get(full);
  if (!found) built.set(full, (found = statement<P, R>(full, text())));
  return found as SqlStatement<P, R>;
}

/** Jobs matching the filter (from $3) with id <= $2, newest first, at most $1: keyset pagination by id. */
export const listJobs = (filter: FilterSql) =>
  filtered<[limit: number, cursor: string, ...filter: unknown[]], JobRow>(
    'list',
    filter,
    // `j.id`: a bare `id` in ORDER BY would be the output column id::text, and sort as text.
    () => `SELECT ${JOB_COLUMNS} FROM awa.all_jobs j WHERE j.id <= $2::bigint AND ${filter.where(3)}
           ORDER BY j.id DESC LIMIT $1`,
  );

/** How many jobs match the filter (from $2), counting no further than $1. */
export const countJobs = (filter: FilterSql) =>
  filtered<[cap: number, ...filter: unknown[]], { count: number }>(
    'count',
    filter,
    () => `SELECT count(*)::int AS count FROM (SELECT FROM awa.all_jobs WHERE ${filter.where(2)} LIMIT $1) s`,
  );

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
