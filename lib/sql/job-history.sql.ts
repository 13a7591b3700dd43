import { millis, pairAmong, statement, withinIds, type JobChanges } from './sql-statement.js';
import { resolveDependents } from './workflow.sql.js';
import { jobEventsAfterChange } from './job-events.sql.js';
import { archiveRows, JOB_TABLE_COLUMNS, jobRowAfter } from './job-row.sql.js';

/*
 * Finished jobs live in awa.job_history (migration AwaJobHistory): every statement that finishes a job
 * moves it there in the same statement, so awa.jobs holds only unfinished jobs (and finished unique
 * jobs that still hold their key). awa.all_jobs reads both.
 */

/**
 * Whether job row `j` leaves awa.jobs when its state becomes `state` (an expression over `j`): it is
 * finished and does not hold its unique key in that state. Never NULL, so `NOT` of it is the rest.
 */
const leaves = (state: string) =>
  `((${state}) IN ('completed', 'failed', 'cancelled')
    AND (j.unique_key IS NULL OR NOT coalesce((${state}) = ANY (j.unique_states), false)))`;

/** A statement's change of job rows `j`: which rows (FROM items and WHERE, fence included), and how. */
export type JobChange = JobChangeHow & (JobChangeJoined | JobChangeKeyed);

interface JobChangeHow {
  /** The rest of the condition on `j` (and the FROM items, when joined): the fence. */
  where?: string;
  /** The columns changed: expressions over the old row `j` (and the FROM items, when joined). */
  set: JobChanges;
  /** The durable events of each changed row `f` (a text[] expression); default: the one of its new state. */
  events?: string;
  /**
   * false: leave out the step that resolves the dependents of the workflow jobs it finishes (ten-odd
   * plan nodes that run on every call, though they find nothing outside workflows). Only for a change
   * whose rows are known to be in no workflow: a job's workflow_id is set at its insert and never changes.
   */
  dependents?: false;
}

/** The rows to change, joined to FROM items that the change's expressions may read. */
interface JobChangeJoined {
  /** FROM items besides `awa.jobs j` (the UPDATE's FROM, the DELETE's USING). */
  from: string;
  /** The id of the job to change, an expression over the FROM items (the join is `j.id = id`). */
  id: string;
}

/**
 * The rows to change named by (job_id, run_lease) pairs, the rows of CTE `pairs`: looked up by key
 * (`= ANY`) and matched by hash (pairAmong), with no join for the statistics to order. The change's
 * expressions read `j` only. A join of the batch with awa.jobs, planned from statistics that took the
 * table for one row, read the batch's span of the table and the batch again for each of its rows:
 * 8 s of 50–240 ms completions at 15,000 jobs/s, until the maintenance leader's ANALYZE.
 */
interface JobChangeKeyed {
  pairs: string;
}

/** Whether job row `j`'s attempt is among the rows of CTE `pairs` (those where `where` holds, over `p`). */
export const jobAmong = (pairs: string, where?: string) => pairAmong('j.id, j.run_lease', `${pairs} p`, 'p', where);

/**
 * The CTEs that apply `change`, ending with `finished`: the changed rows as they are now (every
 * column of awa.jobs, as `RETURNING j.*` of an UPDATE). Rows that stay (unfinished, or unique-held) are
 * updated in place; rows that finish are deleted from awa.jobs and inserted into the current segment
 * of their class's ring in awa.job_history, and the durable events some group subscribes to are written
 * (`events_written`, see job-events.sql.ts). Both halves read the same rows, split by `leaves`, so no
 * row is written twice by the statement; the rows that stay are looked up only among those that did
 * not move, so a batch that all finishes probes awa.jobs once per job, not twice. `random()` in a
 * change (retryAt) is only for rows that stay.
 */
export function changeJobs(change: JobChange): string {
  const assignments = Object.entries(change.set)
    .map(([column, expr]) => `${column} = ${expr}`)
    .join(', ');
  const after = jobRowAfter(change.set);
  const fence = change.where ? ` AND ${change.where}` : '';
  const { movedRows, stayedRows } = 'pairs' in change ? keyedRows(change.pairs) : joinedRows(change);
  return `moved AS (
    DELETE FROM awa.jobs j ${movedRows}${fence} AND ${leaves(change.set.state)}
    RETURNING ${after}
  ), archived AS (${archiveRows('moved')}
  ), stayed AS (
    UPDATE awa.jobs j SET ${assignments} ${stayedRows}${fence}
       AND NOT ${leaves(change.set.state)}
    RETURNING ${JOB_TABLE_COLUMNS.map((c) => `j.${c}`).join(', ')}
  ), finished AS (
    SELECT * FROM stayed UNION ALL SELECT * FROM moved
  ), ${change.dependents === false ? '' : `${resolveDependents('finished')}, `}${jobEventsAfterChange(change.events)}`;
}

/** The USING/FROM and WHERE of each half, joined to `from`. */
function joinedRows({ from, id }: JobChangeJoined): { movedRows: string; stayedRows: string } {
  const span = withinIds('j.id', id, from);
  // Only the rows that did not move: when all did, the span is empty and the half reads nothing.
  const staySpan = withinIds('j.id', id, `${from} WHERE ${id} NOT IN (SELECT m.id FROM moved m)`);
  return {
    movedRows: `USING ${from} WHERE j.id = ${id} AND ${span}`,
    stayedRows: `FROM ${from} WHERE j.id = ${id} AND ${staySpan} AND ${id} NOT IN (SELECT m.id FROM moved m)`,
  };
}

/** The WHERE of each half, keyed by the pairs of CTE `pairs`. */
function keyedRows(pairs: string): { movedRows: string; stayedRows: string } {
  return {
    movedRows: `WHERE j.id = ANY (ARRAY(SELECT p.job_id FROM ${pairs} p)) AND ${jobAmong(pairs)}`,
    // Only the rows that did not move: when all did, the array is empty and the half reads nothing.
    stayedRows: `WHERE j.id = ANY (ARRAY(SELECT p.job_id FROM ${pairs} p WHERE p.job_id NOT IN (SELECT m.id FROM moved m)))
       AND ${jobAmong(pairs)}`,
  };
}

/** A class of awa.job_history: its ring of 8 segments and its own retention. */
export type HistoryClass = 'completed' | 'failed';

/** The segments of a class's ring: completed 0..7, failed (failed and cancelled) 8..15. */
export const RING_SIZE = 8;
const FIRST_SEGMENT: Record<HistoryClass, number> = { completed: 0, failed: RING_SIZE };

/** The ring's next segment after `segment` (an expression) of class `cls` (an expression). */
const nextSegment = (cls: string, segment: string) =>
  `(CASE WHEN ${cls} = 'completed' THEN ${FIRST_SEGMENT.completed} ELSE ${FIRST_SEGMENT.failed} END
    + (${segment} - CASE WHEN ${cls} = 'completed' THEN ${FIRST_SEGMENT.completed} ELSE ${FIRST_SEGMENT.failed} END + 1)
    % ${RING_SIZE})::smallint`;

/**
 * The rotation due in ring $1 (width $2 ms, retention $3 ms), locked: its current segment and the
 * next one, if the current one was written for at least the width and the next one was sealed at
 * least retention + width ago (or never). Nothing otherwise.
 */
export const dueRotation = statement<
  [cls: HistoryClass, widthMs: number, retentionMs: number],
  { current: number; next: number }
>(
  'history_due_rotation',
  `
  SELECT r.segment AS current, s.segment AS next
    FROM awa.history_rings r
    JOIN awa.history_segments s ON s.segment = ${nextSegment('r.class', 'r.segment')}
   WHERE r.class = $1 AND r.rotated_at <= now() - ${millis('$2')}
     AND (s.sealed_at IS NULL OR s.sealed_at <= now() - ${millis('$2::float8 + $3::float8')})
     FOR UPDATE OF r`,
);

/** Empties segment i (partition awa.job_history_i): one statement per segment, no dynamic SQL. */
export const truncateSegment = Array.from({ length: 2 * RING_SIZE }, (_, segment) =>
  statement<[]>(`history_truncate_segment_${segment}`, `TRUNCATE awa.job_history_${segment}`),
);

/** Moves ring $1 from segment $3 (sealed now) on to segment $2 (rotated now). */
export const rotateRing = statement<[cls: HistoryClass, next: number, current: number]>(
  'history_rotate_ring',
  `
  WITH sealed AS (
    UPDATE awa.history_segments SET sealed_at = now() WHERE segment = $3::smallint
  )
  UPDATE awa.history_rings SET segment = $2::smallint, rotated_at = now() WHERE class = $1`,
);
