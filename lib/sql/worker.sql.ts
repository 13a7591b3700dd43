import { AWA_JOBS_CHANNEL } from '../awa.constants.js';
import { RescueErrors } from '../awa.messages.js';
import type { JobState } from '../interfaces/job.interface.js';
import {
  LAST_ATTEMPT,
  appendError,
  failChanges,
  millis,
  pairAmong,
  retryAt,
  statement,
  unnestHidden,
} from './sql-statement.js';
import { changeJobs, jobAmong } from './job-history.sql.js';
import { lockFlowKeys } from './flow-keys.sql.js';

/**
 * Shutdown releases of a started attempt in a row (no attempt spent in between) that give the
 * attempt back; the next one spends it, so a handler that always outlives shutdownTimeout cannot
 * come back forever.
 */
export const SHUTDOWN_RELEASE_LIMIT = 3;

/** The attempts a fenced write changed: (job id, run lease). */
export interface AttemptRow {
  id: string;
  run_lease: string;
}

/** Job ids and run leases of attempts, as $1 and $2 of the fenced writes. */
type Attempts = [ids: string[], runLeases: string[]];

const CANCELLED_TEXT = `'${RescueErrors.cancelled.replace(/'/g, "''")}'::text`;

/**
 * The fence shared by completion, failure, release and cancellation: deletes the leases among
 * `pairs` (a FROM item d(job_id, run_lease)) that are still held and returns them, with their cancel
 * request. Only those attempts may change their job.
 *
 * No join, so no join order for the statistics to get wrong (leasesAmong). awa.active_leases is small
 * but churns at the job rate: an autovacuum that finds it nearly empty over many pages leaves
 * statistics that take it for one row, and a join then read every lease for each pair (50 to 130 ms
 * per completion at 15,000 jobs/s, for minutes).
 */
const releaseHeldLeases = (pairs: string) => `released AS (
    DELETE FROM awa.active_leases l
     WHERE ${leasesAmong(pairs)}
    RETURNING l.job_id, l.run_lease, l.cancel_requested, l.flow_queue AS queue, l.concurrency_key
  )`;
/**
 * Lease row `l` is one of `pairs` (a FROM item d(job_id, run_lease)): read by key, one probe per id
 * (`= ANY`), and matched by hash (pairAmong), whatever the statistics say.
 */
const leasesAmong = (pairs: string) =>
  `l.job_id = ANY (ARRAY(SELECT d.job_id FROM ${pairs})) AND ${pairAmong('l.job_id, l.run_lease', pairs, 'd')}`;
/**
 * The (job, lease) pairs of a batched write, $1 and $2, hidden from the planner (unnestHidden), as
 * every batched lease write's arrays are. Seeing 512 pairs over a churned table, a custom plan (every
 * plan behind a transaction pooler) scanned all of it: in a soak at 15,000 jobs/s such completions
 * took up to 1,041 ms, against 14 ms by key, and the writes fell behind.
 */
const LEASE_PAIRS = `${unnestHidden('$1::bigint[]', '$2::bigint[]')} AS d(job_id, run_lease)`;
const RELEASE_HELD_LEASES = releaseHeldLeases(LEASE_PAIRS);
/** The same fence over the statement's `input` rows f(job_id, run_lease, ...). */
const RELEASE_INPUT_LEASES = releaseHeldLeases('input d');
/**
 * The per-job values of a batched write's `input` rows (f.<column>), as one jsonb object by job id
 * made once per statement: the writes that change their jobs by key (changeJobs' `pairs`) read them
 * with inputValue(), a lookup by key per job, so their batch is never joined to awa.jobs.
 */
const inputValues = (...columns: string[]) => `input_values AS (
    SELECT jsonb_object_agg(f.job_id::text, jsonb_build_object(${columns.map((c) => `'${c}', f.${c}`).join(', ')})) AS m
      FROM input f
  )`;
/** Input column `column` of the job whose id is `id` (job row `j`'s by default), as text (NULL where it was NULL). */
const inputValue = (column: string, id = 'j.id') => `((SELECT v.m FROM input_values v) -> ${id}::text ->> '${column}')`;

/** Whether job row `j`'s attempt, released in this statement, had a cancel request (see jobAmong). */
const CANCEL_REQUESTED = jobAmong('released', 'p.cancel_requested');
/** A release's: whether the attempt's handler had started (a shutdown release), from the batch's `started`. */
const RELEASE_STARTED = `(${inputValue('started')})::boolean`;
/** A release's: whether it spends the attempt (the SHUTDOWN_RELEASE_LIMIT-th in a row of a started one). */
const RELEASE_SPENDS = `(NOT ${CANCEL_REQUESTED} AND ${RELEASE_STARTED} AND j.shutdown_releases + 1 >= ${SHUTDOWN_RELEASE_LIMIT})`;
/** A snooze's: whether the job snoozed its queue's maxSnoozes times already (and fails instead). */
const SNOOZE_CAPPED = `(NOT ${CANCEL_REQUESTED} AND j.snoozes >= (${inputValue('max_snoozes')})::int)`;

/** Job row `j`'s errors with an entry appended when `when` holds (a boolean expression), else as they are. */
const appendErrorWhen = (when: string, errorText: string) =>
  `CASE WHEN ${when} THEN ${appendError(errorText)} ELSE j.errors END`;
/** The cancel entry, else `note` (a text expression, null: none). */
const cancelledOr = (cancelled: string, note: string) =>
  appendErrorWhen(
    `${cancelled} OR ${note} IS NOT NULL`,
    `CASE WHEN ${cancelled} THEN ${CANCELLED_TEXT} ELSE ${note} END`,
  );

/** The completion of attempts $1/$2 (completeJobs), with the step that resolves workflow dependents or without. */
const completion = (dependents?: false) => `
  WITH ${RELEASE_HELD_LEASES}, ${changeJobs({
    pairs: 'released',
    where: `j.state = 'running'`,
    set: {
      state: `CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled' ELSE 'completed' END`,
      finalized_at: 'now()',
      errors: appendErrorWhen(CANCEL_REQUESTED, CANCELLED_TEXT),
    },
    dependents,
  })}
  SELECT d.job_id::text AS id, d.run_lease::text AS run_lease FROM ${LEASE_PAIRS}
   WHERE (d.job_id, d.run_lease) NOT IN (SELECT f.id, f.run_lease FROM finished f)`;

/**
 * Completes attempts ($1 job ids, $2 run leases). Fenced: only an attempt whose lease row still
 * exists is completed. Returns the attempts it did NOT complete (their lease was gone, or their job
 * no longer running): normally none, so the batch's answer is no rows, where listing the ones
 * completed cost the server and the worker a row per job. An attempt with a stored cancel request
 * ends `cancelled` instead, whatever its handler returned.
 */
export const completeJobs = statement<Attempts, AttemptRow>('complete_jobs', completion());

/**
 * completeJobs for attempts of jobs in no workflow (their claimed workflow_id null; it never
 * changes): the same, without the step that resolves dependents, which finds nothing for them but
 * cost the server 5–12% of the statement (a drain's common batch; docs/performance.md).
 */
export const completeJobsOutsideWorkflows = statement<Attempts, AttemptRow>(
  'complete_jobs_outside_workflows',
  completion(false),
);

/**
 * Fails attempts ($1 ids, $2 leases, $3 error texts, $4 retry base ms, $5 retry cap ms): retryable
 * with backoff, or failed once attempts are spent; cancelled if a cancel was requested. Fenced like
 * completeJobs.
 */
export const failJobs = statement<
  [...Attempts, errors: string[], retryBaseMs: number[], retryCapMs: number[]],
  AttemptRow & { state: JobState }
>(
  'fail_jobs',
  `
  WITH input AS (
    SELECT * FROM ${unnestHidden('$1::bigint[]', '$2::bigint[]', '$3::text[]', '$4::float8[]', '$5::float8[]')}
      AS f(job_id, run_lease, error, base_ms, cap_ms)
  ), ${RELEASE_INPUT_LEASES}, ${inputValues('error', 'base_ms', 'cap_ms')}, ${changeJobs({
    pairs: 'released',
    where: `j.state = 'running'`,
    set: failChanges(
      inputValue('error'),
      `${inputValue('base_ms')}::float8`,
      `${inputValue('cap_ms')}::float8`,
      CANCEL_REQUESTED,
    ),
  })}
  SELECT id::text, run_lease::text, state FROM finished`,
);

/**
 * Gives attempts back ($1 ids, $2 leases, $3 error text) without spending an attempt: the job is available again at
 * once. $4 says whether the attempt's handler had started
 * (a shutdown release), $5/$6 are the retry base/cap ms. Three exceptions: an attempt with a cancel
 * request ends `cancelled`; the SHUTDOWN_RELEASE_LIMIT-th release in a row of a started attempt
 * spends it (retryable with backoff, or failed); a job never started is not counted. Fenced like
 * completeJobs; NOTIFYs the queues of the jobs made available. Returns each job's new state. Key
 * rows (of every released lease): see lockFlowKeys.
 */
export const releaseJobs = statement<
  [...Attempts, error: string, started: boolean[], retryBaseMs: number[], retryCapMs: number[]],
  { id: string; state: JobState; notified: string }
>(
  'release_jobs',
  `
  WITH input AS (
    SELECT * FROM ${unnestHidden('$1::bigint[]', '$2::bigint[]', '$4::boolean[]', '$5::float8[]', '$6::float8[]')}
      AS f(job_id, run_lease, started, base_ms, cap_ms)
  ), ${RELEASE_INPUT_LEASES}, ${inputValues('started', 'base_ms', 'cap_ms')}, ${changeJobs({
    pairs: 'released',
    where: `j.state = 'running'`,
    set: {
      state: `CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled' WHEN ${RELEASE_SPENDS} AND ${LAST_ATTEMPT} THEN 'failed'
                   WHEN ${RELEASE_SPENDS} THEN 'retryable' ELSE 'available' END`,
      attempt: `CASE WHEN ${CANCEL_REQUESTED} OR ${RELEASE_SPENDS} THEN j.attempt ELSE j.attempt - 1 END`,
      run_at: `CASE WHEN ${CANCEL_REQUESTED} OR (${RELEASE_SPENDS} AND ${LAST_ATTEMPT}) THEN j.run_at
                    WHEN ${RELEASE_SPENDS} THEN ${retryAt('j.attempt', `${inputValue('base_ms')}::float8`, `${inputValue('cap_ms')}::float8`)}
                    ELSE now() END`,
      finalized_at: `CASE WHEN ${CANCEL_REQUESTED} OR (${RELEASE_SPENDS} AND ${LAST_ATTEMPT}) THEN now() END`,
      shutdown_releases: `CASE WHEN ${CANCEL_REQUESTED} OR ${RELEASE_SPENDS} THEN 0
                               WHEN ${RELEASE_STARTED} THEN j.shutdown_releases + 1 ELSE j.shutdown_releases END`,
      errors: appendError('$3::text'),
    },
  })}, requeued AS (
    SELECT id, queue, state FROM finished
  ), keys_locked AS (${lockFlowKeys('released')}
  )
  SELECT r.id::text, r.state,
         (SELECT count(pg_notify('${AWA_JOBS_CHANNEL}', q.queue))
            FROM (SELECT DISTINCT queue FROM requeued WHERE state = 'available') q) AS notified
    FROM requeued r`,
);

/**
 * Refreshes heartbeat_at of leases ($1 ids, $2 leases) and returns the pairs it did not find (the
 * leases rescued since, `lost`), and those it found with a cancel request (`lost` false): so every
 * cancel reaches its handler within a heartbeat, also when its NOTIFY was missed. Normally nothing
 * comes back, so a chunk costs one round trip and no rows.
 */
export const heartbeatLeases = statement<Attempts, { job_id: string; run_lease: string; lost: boolean }>(
  'heartbeat_leases',
  `
  WITH beat AS (SELECT * FROM ${unnestHidden('$1::bigint[]', '$2::bigint[]')} AS b(job_id, run_lease)),
  refreshed AS (
    UPDATE awa.active_leases l SET heartbeat_at = now()
      FROM beat b
     WHERE l.job_id = b.job_id AND l.run_lease = b.run_lease
    RETURNING l.job_id, l.run_lease, l.cancel_requested
  )
  SELECT b.job_id::text, b.run_lease::text, true AS lost
    FROM beat b
   WHERE NOT EXISTS (SELECT FROM refreshed r WHERE r.job_id = b.job_id AND r.run_lease = b.run_lease)
  UNION ALL
  SELECT r.job_id::text, r.run_lease::text, false AS lost FROM refreshed r WHERE r.cancel_requested`,
);

/**
 * Moves the hard deadline of attempts ($1 ids, $2 leases) to now() + $3 ms (per attempt) when
 * their handler starts after a wait in the prefetch buffer: the deadline counts from the start.
 * Only called for queues with a deadline. Fenced without a join, like releaseHeldLeases: each lease
 * takes its deadline by key from inputValues.
 */
export const startLeases = statement<[...Attempts, deadlineMs: number[]]>(
  'start_leases',
  `
  WITH input AS (
    SELECT * FROM ${unnestHidden('$1::bigint[]', '$2::bigint[]', '$3::float8[]')} AS f(job_id, run_lease, deadline_ms)
  ), ${inputValues('deadline_ms')}
  UPDATE awa.active_leases l SET deadline_at = now() + ${millis(inputValue('deadline_ms', 'l.job_id'))}
   WHERE ${leasesAmong('input d')}`,
);

/**
 * Run first in the heartbeat transaction: each (job, lease) pair is then looked up by primary key,
 * whatever the statistics say. awa.active_leases churns at the job rate and autovacuum lags behind,
 * so its statistics are often far off (a thousand live rows over 20,000 pages, where each key
 * lookup looks as dear as a page in twenty): a plan that sees hundreds of pairs would hash-join them
 * against a sequential scan of every page. The other batched lease writes, outside a transaction,
 * get the same from their arrays' sub-selects (see LEASE_PAIRS).
 */
export const pinKeyLookups = statement<[]>(
  'pin_key_lookups',
  `SELECT set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true),
          set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)`,
);

/**
 * Finalizes attempts as cancelled ($1 ids, $2 leases, $3 error text) after producer.cancel()
 * signalled their handlers. Fenced like completeJobs.
 */
export const cancelRunningJobs = statement<[...Attempts, error: string], AttemptRow>(
  'cancel_running_jobs',
  `
  WITH ${RELEASE_HELD_LEASES}, ${changeJobs({
    pairs: 'released',
    where: `j.state = 'running'`,
    set: { state: `'cancelled'`, finalized_at: 'now()', errors: appendError('$3::text') },
  })}
  SELECT id::text, run_lease::text FROM finished`,
);

/**
 * completeJobs for a batch where some handler returned a value: also stores $3, each attempt's
 * output as JSON text (null: none), and appends $4, a note for the errors (null: none), e.g. an
 * output over the cap. Batches without either use completeJobs, unchanged. Fenced like completeJobs;
 * an attempt with a cancel request ends `cancelled`, its output not stored.
 */
export const completeJobsWithOutput = statement<
  [...Attempts, outputs: Array<string | null>, notes: Array<string | null>],
  AttemptRow
>(
  'complete_jobs_with_output',
  `
  WITH input AS (
    SELECT * FROM ${unnestHidden('$1::bigint[]', '$2::bigint[]', '$3::text[]', '$4::text[]')} AS f(job_id, run_lease, output, note)
  ), ${RELEASE_INPUT_LEASES}, ${inputValues('output', 'note')}, ${changeJobs({
    pairs: 'released',
    where: `j.state = 'running'`,
    set: {
      state: `CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled' ELSE 'completed' END`,
      finalized_at: 'now()',
      output: `CASE WHEN ${CANCEL_REQUESTED} THEN j.output ELSE ${inputValue('output')}::jsonb END`,
      errors: cancelledOr(CANCEL_REQUESTED, inputValue('note')),
    },
  })}
  SELECT id::text, run_lease::text FROM finished`,
);

/**
 * Snoozes attempts ($1 ids, $2 leases, $3 delays in ms, $4 each queue's maxSnoozes, $5 the error
 * text if over it): back to `scheduled` at now() + delay, attempt given back (so the next failure's
 * backoff is as if no snooze happened), snoozes + 1. A job that snoozed maxSnoozes times already
 * fails for good with that error instead; one with a cancel request ends `cancelled`. Fenced like
 * completeJobs: a rescued attempt's snooze changes nothing.
 */
export const snoozeJobs = statement<
  [...Attempts, delayMs: number[], maxSnoozes: number[], capErrors: string[]],
  AttemptRow & { state: JobState }
>(
  'snooze_jobs',
  `
  WITH input AS (
    SELECT * FROM ${unnestHidden('$1::bigint[]', '$2::bigint[]', '$3::float8[]', '$4::int[]', '$5::text[]')}
      AS f(job_id, run_lease, delay_ms, max_snoozes, cap_error)
  ), ${RELEASE_INPUT_LEASES}, ${inputValues('delay_ms', 'max_snoozes', 'cap_error')}, ${changeJobs({
    pairs: 'released',
    where: `j.state = 'running'`,
    set: {
      state: `CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled' WHEN ${SNOOZE_CAPPED} THEN 'failed' ELSE 'scheduled' END`,
      attempt: `CASE WHEN ${CANCEL_REQUESTED} OR ${SNOOZE_CAPPED} THEN j.attempt ELSE j.attempt - 1 END`,
      snoozes: `CASE WHEN ${CANCEL_REQUESTED} OR ${SNOOZE_CAPPED} THEN j.snoozes ELSE j.snoozes + 1 END`,
      run_at: `CASE WHEN ${CANCEL_REQUESTED} OR ${SNOOZE_CAPPED} THEN j.run_at
                    ELSE now() + ${millis(`${inputValue('delay_ms')}::float8`)} END`,
      finalized_at: `CASE WHEN ${CANCEL_REQUESTED} OR ${SNOOZE_CAPPED} THEN now() END`,
      shutdown_releases: '0',
      errors: appendErrorWhen(
        `${CANCEL_REQUESTED} OR ${SNOOZE_CAPPED}`,
        `CASE WHEN ${CANCEL_REQUESTED} THEN ${CANCELLED_TEXT} ELSE ${inputValue('cap_error')} END`,
      ),
    },
  })}
  SELECT id::text, run_lease::text, state FROM finished`,
);

/**
 * Stores progress ($3, JSON texts) on running attempts ($1 ids, $2 leases). Fenced: only where the
 * lease row is still held and the job still runs on that lease, so a rescued attempt's progress
 * never lands. Returns the attempts written.
 */
export const writeProgress = statement<[...Attempts, values: string[]], AttemptRow>(
  'write_progress',
  `
  WITH input AS (
    SELECT * FROM ${unnestHidden('$1::bigint[]', '$2::bigint[]', '$3::text[]')} AS f(job_id, run_lease, value)
  ), held AS (
    SELECT l.job_id, l.run_lease FROM awa.active_leases l WHERE ${leasesAmong('input d')}
  ), ${inputValues('value')}
  UPDATE awa.jobs j SET progress = ${inputValue('value')}::jsonb
   WHERE j.id = ANY (ARRAY(SELECT h.job_id FROM held h)) AND ${jobAmong('held')} AND j.state = 'running'
  RETURNING j.id::text, j.run_lease::text`,
);
