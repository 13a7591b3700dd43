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

/** A claimed row as the claim statement returns it. */
export interface ClaimedJobRow {
  id: string;
  kind: string;
  queue: string;
  args: unknown;
  attempt: number;
  max_attempts: number;
  priority: number;
  run_lease: string;
  /** created_at in epoch ms: a float parses far faster than a timestamp, and is rarely read. */
  created_ms: number;
  /** run_at in epoch ms (when the job became due), for the wait metric. */
  run_at_ms: number;
  /** The W3C trace context stored at enqueue, if a span was active then. */
  traceparent: string | null;
  /** The job's workflow (docs/workflows.md), else null. */
  workflow_id: string | null;
}

/**
 * A row of the plain claim (claimJobs): a ClaimedJobRow without its queue, the claim's own ($1). One
 * text column less per job to send and to parse (about 0.5 µs of the worker's CPU per job).
 */
export type PlainClaimedRow = Omit<ClaimedJobRow, 'queue'>;

/**
 * A plain claim's row from its columns, in the order of claimJobs' SELECT (claimedColumns). Its queue is left empty
 * for claimBatch to set, so every claimed row has one shape from the start.
 */
export const plainClaimedRow = (c: unknown[]): PlainClaimedRow => {
  const row: ClaimedJobRow = {
    id: c[0] as string,
    kind: c[1] as string,
    queue: '',
    args: c[2],
    attempt: c[3] as number,
    max_attempts: c[4] as number,
    priority: c[5] as number,
    run_lease: c[6] as string,
    created_ms: c[7] as number,
    run_at_ms: c[8] as number,
    traceparent: c[9] as string | null,
    workflow_id: c[10] as string | null,
  };
  return row;
};

/** The attempts a fenced write changed: (job id, run lease). */
export interface AttemptRow {
  id: string;
  run_lease: string;
}

/** Job ids and run leases of attempts, as $1 and $2 of the fenced writes. */
type Attempts = [ids: string[], runLeases: string[]];

const CANCELLED_TEXT = `'${RescueErrors.cancelled.replace(/'/g, "''")}'::text`;

/**
 * The run lease of a job's next attempt (`j`: its row): above its last one, and at least the database
 * clock in microseconds. A plain claim commits asynchronously (see ClaimConnection); one lost in a
 * server crash leaves its job with the lease before it, and an attempt of the lost claim may still be
 * running in a worker that outlived the crash. The next claim happens later on the clock, so its lease
 * is above the lost one, and that attempt's writes fail the fence. (+1 alone would hand out the lost
 * number again.) This holds while the clock does not step back further than the crash took.
 * The flow claim (awa.claim_flow v4) still gives +1: it commits synchronously, so its leases are never
 * lost, and +1 over a lost clock value is still above it. A new version of it should use this rule.
 * The clock is read once per statement (a sub-select, an InitPlan): extract() computes in numeric, slow per row.
 */
export const CLOCK_RUN_LEASE = `(SELECT (extract(epoch FROM statement_timestamp()) * 1000000)::bigint)`;
const NEXT_RUN_LEASE = `greatest(j.run_lease + 1, ${CLOCK_RUN_LEASE})`;

/**
 * Timestamp `column` in epoch ms, as a float8: the same value as (extract(epoch FROM x) * 1000)::float8
 * (the whole microseconds, rounded once), at a third of its cost per row (extract() computes in
 * numeric). date_part's seconds are within 0.13 µs of the exact value and the product within
 * 0.25 µs, so round() gets the exact microsecond back (for timestamps before the year 2255).
 */
export const epochMs = (column: string) => `round(date_part('epoch', ${column}) * 1000000) / 1000`;

/**
 * A claimed row's columns of the job row prefixed `j` ('j.', or '' unqualified), as (expression,
 * name) in plainClaimedRow's order. The claim's rows and a handoff's notification are read by
 * position, the handed jobs read after a reconnect by name: each lists them from here.
 */
const claimedColumns = (j: string): Array<[expression: string, name: string]> => [
  [`${j}id::text`, 'id'],
  [`${j}kind`, 'kind'],
  [`${j}args`, 'args'],
  [`${j}attempt`, 'attempt'],
  [`${j}max_attempts`, 'max_attempts'],
  [`${j}priority`, 'priority'],
  [`${j}run_lease::text`, 'run_lease'],
  [epochMs(`${j}created_at`), 'created_ms'],
  [epochMs(`${j}run_at`), 'run_at_ms'],
  [`${j}traceparent`, 'traceparent'],
  [`${j}workflow_id::text`, 'workflow_id'],
];

/** The select list of a claimed row (see claimedColumns). */
export const claimedSelectList = (j = '') =>
  claimedColumns(j)
    .map(([e, name]) => `${e} AS ${name}`)
    .join(', ');

/** A claimed row's values in order, for json_build_array (see claimedColumns). */
export const claimedValueList = (j: string) =>
  claimedColumns(j)
    .map(([e]) => e)
    .join(', ');

/**
 * Where each kind's claim reads from in the claim index: the available jobs after (priority,
 * run_at in epoch microseconds, id), per kind in the order of the claim's kinds ($6..$8 of claimJobs).
 */
export type ClaimAfter = [priorities: number[], runAtUs: number[], ids: string[]];

/** A key below every job's (no priority is that low): the claim reads the whole index (see ClaimCursor). */
export const INDEX_START = { priority: -2_147_483_648, runAtUs: 0, id: '0' } as const;

/** $6..$8 of a claim that reads the whole claim index for each of `kinds`. */
export const fromIndexStart = (kinds: readonly string[]): ClaimAfter => [
  kinds.map(() => INDEX_START.priority),
  kinds.map(() => INDEX_START.runAtUs),
  kinds.map(() => INDEX_START.id),
];

/**
 * Claims up to $3 jobs of queue $1 whose kind is in $2, for instance $4, with deadline $5 ms
 * (0: none), reading each kind's available jobs after its key in $6..$8 (ClaimAfter; fromIndexStart:
 * all of them). Takes available jobs and due scheduled/retryable ones, so a due retry needs no
 * maintenance tick. Each claimed job gets state running, attempt+1, a new run lease (NEXT_RUN_LEASE)
 * and a lease row.
 * Each handled kind is read on its own (a LATERAL with its own LIMIT) from the (queue, kind)
 * indexes, so jobs of other kinds and other queues are never read, however many there are; the
 * best $3 of the per-kind candidates are claimed. The kinds come through a sub-select so that a
 * custom plan, like the generic one, cannot see how many there are: both then cost the same, and
 * the prepared statement settles on its generic plan instead of being planned on every call.
 * The update matches `id = ANY(ARRAY(...))` rather than joining `picked`: its generic plan then
 * stays a primary-key lookup, so the prepared statement is planned once, not on every call.
 * A paused queue (awa.queues.paused_at, see QueueAdmin) has no kinds to claim: every claim reads
 * the pause (one primary-key lookup), so it holds on every instance from the pause's commit on.
 * The key after which a kind is read is a condition of the index scan (a row comparison on
 * (priority, run_at, id)): the scan starts there, and the entries before it are never visited. Its
 * run_at comes as a float of whole microseconds (exact below 2^53) and is added to the epoch as an
 * interval, exactly: a division into seconds could round it.
 * The rows leave out the queue, $1 (PlainClaimedRow); claimBatch puts it back.
 */
export const claimJobs = statement<
  [queue: string, kinds: string[], limit: number, instanceId: string, deadlineMs: number, ...after: ClaimAfter],
  PlainClaimedRow
>(
  'claim_jobs',
  `
  WITH kinds AS (
    SELECT DISTINCT ON (kind) kind, ap, ar, ai
      FROM ${unnestHidden('$2::text[]', '$6::int[]', '$7::float8[]', '$8::bigint[]')}
           AS k(kind, ap, ar, ai)
     WHERE NOT EXISTS (SELECT FROM awa.queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL)
  ), available AS (
    SELECT a.id, a.priority, a.run_at FROM kinds k CROSS JOIN LATERAL (
      SELECT id, priority, run_at FROM awa.jobs
       WHERE state = 'available' AND queue = $1 AND kind = k.kind
         AND (priority, run_at, id) > (k.ap, 'epoch'::timestamptz + k.ar * interval '1 microsecond', k.ai)
       ORDER BY priority, run_at, id
       LIMIT $3 FOR UPDATE SKIP LOCKED
    ) a
  ), due AS (
    SELECT d.id, d.priority, d.run_at FROM kinds k CROSS JOIN LATERAL (
      SELECT id, priority, run_at FROM awa.jobs
       WHERE state IN ('scheduled', 'retryable') AND run_at <= now() AND queue = $1 AND kind = k.kind
       ORDER BY run_at, id
       LIMIT $3 FOR UPDATE SKIP LOCKED
    ) d
  ), picked AS (
    SELECT id FROM (SELECT * FROM available UNION ALL SELECT * FROM due) c
     ORDER BY priority, run_at, id LIMIT $3
  ), claimed AS (
    UPDATE awa.jobs j
       SET state = 'running', attempt = j.attempt + 1, run_lease = ${NEXT_RUN_LEASE}, attempted_at = now()
     WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
    RETURNING j.id, j.kind, j.queue, j.args, j.attempt, j.max_attempts, j.priority, j.run_lease, j.created_at,
              j.run_at, j.traceparent, j.workflow_id
  ), leased AS (
    INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, deadline_at, claimed_at)
    SELECT id, run_lease, $4, now(), CASE WHEN $5::float8 > 0 THEN now() + ${millis('$5')} END, now()
      FROM claimed
  )
  SELECT ${claimedSelectList()} FROM claimed`,
  plainClaimedRow,
);

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

/**
 * Completes attempts ($1 job ids, $2 run leases). Fenced: only an attempt whose lease row still
 * exists is completed. Returns the attempts it did NOT complete (their lease was gone, or their job
 * no longer running): normally none, so the batch's answer is no rows, where listing the ones
 * completed cost the server and the worker a row per job. An attempt with a stored cancel request
 * ends `cancelled` instead, whatever its handler returned.
 */
export const completeJobs = statement<Attempts, AttemptRow>(
  'complete_jobs',
  `
  WITH ${RELEASE_HELD_LEASES}, ${changeJobs({
    pairs: 'released',
    where: `j.state = 'running'`,
    set: {
      state: `CASE WHEN ${CANCEL_REQUESTED} THEN 'cancelled' ELSE 'completed' END`,
      finalized_at: 'now()',
      errors: appendErrorWhen(CANCEL_REQUESTED, CANCELLED_TEXT),
    },
  })}
  SELECT d.job_id::text AS id, d.run_lease::text AS run_lease FROM ${LEASE_PAIRS}
   WHERE (d.job_id, d.run_lease) NOT IN (SELECT f.id, f.run_lease FROM finished f)`,
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
