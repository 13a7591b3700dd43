import { AWA_CANCEL_CHANNEL, AWA_JOBS_CHANNEL } from '../awa.constants.js';
import type { JobError, JobState } from '../interfaces/job.interface.js';
import { appendError, statement } from './sql-statement.js';
import { changeJobs } from './job-history.sql.js';
import { lockFlowKeys } from './flow-keys.sql.js';

/** A job row as getJob returns it (JOB_COLUMNS). */
export interface JobRow {
  id: string;
  kind: string;
  queue: string;
  args: unknown;
  state: JobState;
  priority: number;
  attempt: number;
  max_attempts: number;
  run_at: Date;
  created_at: Date;
  attempted_at: Date | null;
  finalized_at: Date | null;
  errors: JobError[];
  run_lease: string;
  tags: string[];
  unique_key: string | null;
  snoozes: number;
  progress: unknown;
  output: unknown;
  workflow_id: string | null;
}

/** Columns of a job as `JobRecord` reads them. */
export const JOB_COLUMNS = `id::text, kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at,
  attempted_at, finalized_at, errors, run_lease::text, tags, unique_key, snoozes, progress, output, workflow_id::text`;

/**
 * Inserts jobs from one JSON array of arrays [kind, queue, args, priority, max_attempts, run_at,
 * tags, concurrency_key, traceparent]; the elements from run_at on may be null or left out.
 * A job whose run_at is in the future starts `scheduled`. The insert trigger NOTIFYs the queues.
 * Ids come back in input order (identity values are drawn in insert order).
 * Arrays read by position from one jsonb: the payload is parsed once and each args is copied out as
 * jsonb. json_to_recordset over objects built a hash per element and parsed every args again, which
 * was about half the statement's server time.
 */
export const insertJobs = statement<[jobRows: string], { id: string }>(
  'insert_jobs',
  `
  INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, run_at, state, tags, concurrency_key, traceparent)
  SELECT j->>0, j->>1, coalesce(j->2, 'null'), (j->>3)::smallint, (j->>4)::integer, coalesce((j->>5)::timestamptz, now()),
         CASE WHEN (j->>5)::timestamptz > now() THEN 'scheduled' ELSE 'available' END,
         CASE WHEN jsonb_typeof(j->6) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(j->6)) ELSE '{}' END,
         j->>7, j->>8
    FROM jsonb_array_elements($1::jsonb) AS j
  RETURNING id::text`,
);

/**
 * insertJobs for a large batch (see LARGE_BATCH_BYTES): the same insert from one JSON (not jsonb)
 * array of objects {kind, queue, args, priority, max_attempts, run_at, tags?, concurrency_key?,
 * traceparent?}. PostgreSQL refuses a jsonb array past 256 MiB, and a jsonb can be several times its
 * JSON text (small numbers, short keys); json_to_recordset reads the text and makes each args a jsonb
 * of its own, so a batch is bounded by the statement's parameter size instead.
 */
export const insertJobsLarge = statement<[jobsJson: string], { id: string }>(
  'insert_jobs_large',
  `
  INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, run_at, state, tags, concurrency_key, traceparent)
  SELECT t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.priority, t.max_attempts, coalesce(t.run_at, now()),
         CASE WHEN t.run_at > now() THEN 'scheduled' ELSE 'available' END, coalesce(t.tags, '{}'), t.concurrency_key,
         t.traceparent
    FROM json_to_recordset($1::json)
      AS t(kind text, queue text, args jsonb, priority smallint, max_attempts integer, run_at timestamptz, tags text[],
           concurrency_key text, traceparent text)
  RETURNING id::text`,
);

/** One input row of insertUniqueJobs: its position `ord`, and the unique key it was given (null: none). */
export interface UniqueInsertRow {
  ord: number;
  unique_key: string | null;
  /** The new job's id; null when a job holding the same key blocked it (a duplicate). */
  id: string | null;
}

/**
 * insertJobs for a batch with unique jobs: each element may add {ord, unique_key, unique_period,
 * unique_states}. With unique_period (ms), the key gets `:<bucket>` appended, the bucket being
 * floor(epoch ms of now() / period): the database clock, so every instance puts a call in the same
 * bucket. A keyed job is inserted only if no job holding its key is in one of that job's
 * unique_states (the partial unique index jobs_unique_idx arbitrates, race-free); a later element
 * of the batch with the key of an earlier one is not inserted. Returns every input row in `ord`
 * order with its final key and its new id, or a null id where it was not inserted. Unkeyed rows
 * get their ids by insert order, as in insertJobs.
 */
export const insertUniqueJobs = statement<[jobsJson: string], UniqueInsertRow>(
  'insert_unique_jobs',
  `
  WITH input AS (
    SELECT t.*, row_number() OVER (PARTITION BY t.key ORDER BY t.ord) = 1 AS first_of_key
      FROM (
        SELECT t.*, CASE WHEN t.unique_period IS NULL THEN t.unique_key
                    ELSE t.unique_key || ':' || floor(extract(epoch FROM now()) * 1000 / t.unique_period)::bigint
                    END AS key
          FROM jsonb_to_recordset($1::jsonb)
            AS t(ord integer, kind text, queue text, args jsonb, priority smallint, max_attempts integer,
                 run_at timestamptz, tags text[], unique_key text, unique_period bigint, unique_states text[],
                 concurrency_key text, traceparent text)
      ) t
  ), inserted AS (
    INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, run_at, state, tags, unique_key, unique_states,
                          concurrency_key, traceparent)
    SELECT i.kind, i.queue, coalesce(i.args, 'null'::jsonb), i.priority, i.max_attempts, coalesce(i.run_at, now()),
           CASE WHEN i.run_at > now() THEN 'scheduled' ELSE 'available' END, coalesce(i.tags, '{}'), i.key,
           i.unique_states, i.concurrency_key, i.traceparent
      FROM input i WHERE i.key IS NULL OR i.first_of_key ORDER BY i.ord
    ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state = ANY (unique_states) DO NOTHING
    RETURNING id, unique_key
  ), unkeyed_ids AS (
    SELECT id, row_number() OVER (ORDER BY id) AS n FROM inserted WHERE unique_key IS NULL
  ), unkeyed AS (
    SELECT ord, row_number() OVER (ORDER BY ord) AS n FROM input WHERE key IS NULL
  )
  SELECT i.ord, i.key AS unique_key, coalesce(u.id, k.id)::text AS id
    FROM input i
    LEFT JOIN unkeyed un ON un.ord = i.ord
    LEFT JOIN unkeyed_ids u ON u.n = un.n
    LEFT JOIN inserted k ON i.first_of_key AND k.unique_key = i.key
   ORDER BY i.ord`,
);

/** A duplicate resolved by resolveUniqueJobs: the job holding its key, null if none does any more. */
export interface UniqueHolderRow {
  ord: number;
  id: string | null;
  kind: string | null;
  queue: string | null;
  replaced: boolean;
}

/**
 * Finds, for each element {ord, unique_key, replace, args, run_at} of a JSON array, the job that
 * holds the key (in one of its unique_states). Where `replace` is set and that job is still waiting
 * (scheduled, available, retryable; not running), its args and run_at are replaced by those of the
 * last such element of the key, and it becomes scheduled or available by the new run_at (NOTIFYing
 * its queue when available). A null id: no job holds the key any more (it finished, or was deleted,
 * after the insert conflicted); the caller inserts again. Key rows: see lockFlowKeys.
 */
export const resolveUniqueJobs = statement<[duplicatesJson: string], UniqueHolderRow>(
  'resolve_unique_jobs',
  `
  WITH input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb)
      AS t(ord integer, unique_key text, replace boolean, args jsonb, run_at timestamptz)
  ), replacement AS (
    SELECT DISTINCT ON (unique_key) * FROM input WHERE replace ORDER BY unique_key, ord DESC
  ), replaced AS (
    UPDATE awa.jobs j
       SET args = coalesce(r.args, 'null'::jsonb), run_at = coalesce(r.run_at, now()),
           state = CASE WHEN r.run_at > now() THEN 'scheduled' ELSE 'available' END
      FROM replacement r
     WHERE j.unique_key = r.unique_key AND j.unique_key IS NOT NULL AND j.state = ANY (j.unique_states)
       AND j.state IN ('scheduled', 'available', 'retryable')
    RETURNING j.id, j.unique_key, j.kind, j.queue, j.state, j.concurrency_key
  ), keys_locked AS (${lockFlowKeys("(SELECT * FROM replaced WHERE state = 'available')")}
  ), holder AS (
    SELECT id, unique_key, kind, queue FROM awa.jobs
     WHERE unique_key IN (SELECT unique_key FROM input) AND unique_key IS NOT NULL AND state = ANY (unique_states)
  ), notified AS (
    SELECT count(pg_notify('${AWA_JOBS_CHANNEL}', q.queue)) AS n
      FROM (SELECT DISTINCT queue FROM replaced WHERE state = 'available') q
  )
  SELECT i.ord, coalesce(r.id, h.id)::text AS id, coalesce(r.kind, h.kind) AS kind,
         coalesce(r.queue, h.queue) AS queue, (i.replace AND r.id IS NOT NULL) AS replaced
    FROM input i
    LEFT JOIN replaced r ON r.unique_key = i.unique_key
    LEFT JOIN holder h ON h.unique_key = i.unique_key
   CROSS JOIN notified
   ORDER BY i.ord`,
);

export const getJob = statement<[id: string], JobRow>(
  'get_job',
  `SELECT ${JOB_COLUMNS} FROM awa.all_jobs WHERE id = $1::bigint`,
);

/**
 * Cancels a job that is not running and not finished. Returns its previous state, queue and kind, or nothing.
 * A running job gets a stored cancel request instead (see requestCancel).
 */
export const cancelWaitingJob = statement<
  [id: string, error: string],
  { previous_state: JobState; queue: string; kind: string }
>(
  'cancel_waiting_job',
  `
  WITH target AS (
    SELECT id, state FROM awa.jobs
     WHERE id = $1::bigint AND state IN ('scheduled', 'available', 'retryable', 'waiting')
     FOR UPDATE
  ), ${changeJobs({
    from: 'target t',
    id: 't.id',
    set: { state: `'cancelled'`, finalized_at: 'now()', errors: appendError('$2::text') },
  })}
  SELECT t.state AS previous_state, f.queue, f.kind FROM finished f JOIN target t ON t.id = f.id`,
);

/**
 * Stores a cancel request on the lease of running job $1 and NOTIFYs `awa_cancel` so its instance
 * aborts the handler at once (its heartbeat finds the request anyway). Every later transition of
 * that attempt (completion, failure, release, rescue) then ends the job `cancelled`. Returns the
 * job's state and whether a lease was flagged; nothing for an unknown id. Locks only the lease row,
 * the order in which completions lock (lease, then job), so it never deadlocks with them.
 */
export const requestCancel = statement<[id: string], { state: JobState; signalled: boolean; notified: string }>(
  'request_cancel',
  `
  WITH flagged AS (
    UPDATE awa.active_leases l SET cancel_requested = true WHERE l.job_id = $1::bigint
    RETURNING l.job_id
  )
  SELECT j.state, EXISTS (SELECT FROM flagged) AS signalled,
         (SELECT count(pg_notify('${AWA_CANCEL_CHANNEL}', f.job_id::text)) FROM flagged f) AS notified
    FROM awa.all_jobs j WHERE j.id = $1::bigint`,
);
