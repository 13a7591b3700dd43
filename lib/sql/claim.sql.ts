import { millis, statement, unnestHidden } from './sql-statement.js';

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
 * A claimed row without its queue: the claim (claimJobs) takes it from its own $1, and a handoff's
 * notification carries it beside the row (handedOffJob).
 */
export type PlainClaimedRow = Omit<ClaimedJobRow, 'queue'>;

/**
 * A claimed row from its values in claimedColumns' order (a handoff's notification). Its queue is left
 * empty for the caller to set, so every claimed row has one shape from the start.
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
 * name) in plainClaimedRow's order. A handoff's notification is read by position, the handed jobs
 * read after a reconnect by name: each lists them from here. The claim packs the same values
 * (packedClaimedColumns; test/sql/claim.sql.spec.ts reads them both ways).
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

/** The separator of a claimed row's packed values (packedClaimedColumns). */
const UNIT = '\x1f';

/**
 * A claimed row (of alias `claimed`, unqualified) as three columns, for claimedRowOf: its values other
 * than the run lease and the args in one text, joined by 0x1F in claimedColumns' order, the kind as
 * its position in the claim's kinds (`kinds`, its $2: the worker has those strings already); then the
 * run lease and the args. pg makes a string of each column of each row, and eleven of them were the
 * largest share of the worker's CPU per job. The run lease stays a column: V8 makes a substring of 13
 * characters or more a slice of its text, so the attempt, which keeps its lease, would keep the whole
 * text (a drain promoted half as much again). The args stay one too: a claim of hundreds of jobs with
 * large args in one text could pass the longest string V8 makes. No value in the text can hold the
 * separator: the traceparent is cleared of it (a valid one has none), the rest are digits, floats
 * and a uuid.
 */
const packedClaimedColumns = (kinds: string) =>
  `concat_ws(e'\\x1f', id, coalesce(array_position(${kinds}, kind), 0), attempt, max_attempts, priority,
     ${epochMs('created_at')}, ${epochMs('run_at')}, coalesce(translate(traceparent, e'\\x1f', ''), ''),
     coalesce(workflow_id::text, '')), run_lease::text, args`;

/**
 * A claimed row from the claim's three columns (packedClaimedColumns), with its kind and queue from the
 * claim's own values ($2 and $1): every row shares those strings.
 */
export function claimedRowOf(columns: unknown[], values: readonly unknown[]): ClaimedJobRow {
  const kinds = values[1] as readonly string[];
  const v = (columns[0] as string).split(UNIT);
  const kind = kinds[Number(v[1]) - 1];
  if (v.length !== 9 || kind === undefined)
    throw new Error(`unreachable: a claimed row of ${v.length} values, kind ${v[1]} of ${kinds.length}`);
  const row: ClaimedJobRow = {
    id: v[0]!,
    kind,
    queue: values[0] as string,
    args: columns[2],
    attempt: Number(v[2]),
    max_attempts: Number(v[3]),
    priority: Number(v[4]),
    run_lease: columns[1] as string,
    created_ms: Number(v[5]),
    run_at_ms: Number(v[6]),
    traceparent: v[7] || null,
    workflow_id: v[8] || null,
  };
  return row;
}

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
 * Each row comes as three columns (packedClaimedColumns), the queue left out: it is $1.
 */
export const claimJobs = statement<
  [queue: string, kinds: string[], limit: number, instanceId: string, deadlineMs: number, ...after: ClaimAfter],
  ClaimedJobRow
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
  SELECT ${packedClaimedColumns('$2::text[]')} FROM claimed`,
  claimedRowOf,
);
