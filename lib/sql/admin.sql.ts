import { AWA_CONTROL_CHANNEL, AWA_JOBS_CHANNEL } from '../awa.constants.js';
import type { JobState } from '../interfaces/job.interface.js';
import { statement } from './sql-statement.js';
import { JOB_TABLE_COLUMNS, jobRowAfter } from './job-row.sql.js';
import { deletedSource, resolveDependents } from './workflow.sql.js';
import { DELETED_EVENTS } from './job-events.sql.js';

// QueueAdmin's statements about a queue or one job. Those over a filter: admin-filter.sql.ts (the
// listings) and admin-batch.sql.ts (the bulk batches), which share the fragments exported here.

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
export const RETRY_ASSIGNMENTS = Object.entries(RETRY_CHANGES)
  .map(([column, expr]) => `${column} = ${expr}`)
  .join(', ');

/**
 * CTEs `unarchived` and `restored`: the jobs of awa.job_history among `picked` (rows with id and
 * archived) for which `also` holds go back into awa.jobs, same id, retried; `restored` returns their
 * queue and concurrency_key. awa.jobs' insert triggers NOTIFY their queues and mark their keys.
 */
export const restoreArchived = (picked: string, also = 'true') => `unarchived AS (
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
export const DELETED_COLUMNS = 'j.id, j.kind, j.queue, j.state, j.attempt, j.workflow_id';

export const RETRYABLE_STATES = `('completed', 'failed', 'cancelled')`;

/**
 * Pauses queue $1 (a row in awa.queues; an earlier pause keeps its time) and NOTIFYs `awa_control`.
 * Claims read the pause themselves (see claimSql.claimJobs), so it holds from this commit on.
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
