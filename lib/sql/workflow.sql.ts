import type { JobState } from '../interfaces/job.interface.js';
import { appendError, statement } from './sql-statement.js';
import { archiveRows, jobRowAfter } from './job-row.sql.js';
import { recordJobEvents } from './job-events.sql.js';
import { lockFlowKeys } from './flow-keys.sql.js';

/*
 * Workflows (docs/workflows.md, migration AwaWorkflows): a job with unmet dependencies is `waiting`,
 * counting them in awa.jobs.waiting_on; each edge is a row of awa.job_dependencies. Every statement
 * that ends jobs resolves their edges in the same statement (resolveDependents, appended to
 * changeJobs and to the deletes), so the last dependency's fenced completion unblocks its dependents.
 */

/** How a dependent treats a dependency that ends other than completed. */
export type DependencyPolicy = 'cancel' | 'fail' | 'ignore';

/** The error entry of a job ended because a dependency did not complete. */
export const DEPENDENCY_ENDED_TEXT = 'a dependency did not complete';

/** The waiting dependents of job `id` a non-completion dooms (policy cancel or fail), by its edges' index. */
const DOOMED_DEPENDENTS = (id: string) => `(
      SELECT e.dependent_id AS id, e.policy FROM awa.job_dependencies e
        JOIN awa.jobs j ON j.id = e.dependent_id AND j.state = 'waiting'
       WHERE e.dependency_id = ${id} AND e.policy <> 'ignore' AND e.state IS NULL OFFSET 0)`;

/**
 * The CTEs (all named wf_*) that resolve the dependents of the jobs of `source` (a relation with id,
 * state, output, workflow_id: the rows the statement changed or deleted, `state` their ending).
 * Plain jobs (no workflow_id) are filtered first, so they cost a filter and nothing else.
 * - wf_doomed: the waiting jobs that end because a dependency did not complete and their edge's
 *   policy is cancel or fail, transitively (a recursive walk: its endings end their own dependents);
 *   `failed` if any such edge says fail, else `cancelled`. Each step reads the edges of one job by
 *   their index (DOOMED_DEPENDENTS, a lateral subquery kept whole by OFFSET 0): flattened into a join,
 *   the planner may join every edge with every waiting job instead, and PostgreSQL runs the recursive
 *   term once even when the walk found nothing (tens of ms beside a chain of 1,000 without statistics).
 * - wf_resolved: the unresolved edges out of the ended and doomed jobs get the dependency's ending and
 *   output, once: a job ending again after a retry resolves nothing twice.
 * - wf_unblocked: each still-waiting dependent's count goes down by its edges resolved here that
 *   count (completed, or `ignore`), one UPDATE per dependent however many of its dependencies end
 *   in this statement; at 0 it becomes available (scheduled if its runAt is later).
 * - wf_doomed_events: the doomed jobs' durable events (cancelled, failed), in the same statement as
 *   every other transition's.
 * Rows of `source` are never changed again here (one statement must not write a row twice). Rows to
 * write are locked in id order first (wf_locked), so two statements lock shared dependents in the same
 * order; the writes then join wf_locked alone, by primary key. (Also `= ANY(ARRAY(...))` of it, the
 * planner expects a few rows and loops over wf_locked for each: quadratic in a fan-out of 10,000.)
 * Each row is locked by a lateral subquery on its primary key, in id order: a row changed
 * since the statement's snapshot is re-checked after its lock against that key alone. (Joined to the
 * union of wf_counts and wf_doomed instead, PostgreSQL read the union again for the re-check and lost
 * the rows after the first: a dependent lost its share of a concurrent completion; joined to a CTE,
 * the planner chose a hash join over all of awa.jobs on small tables. Tests:
 * workflow-race.sql.spec.ts, workflow-fan-in-plan.spec.ts.)
 * The key rows of keyed jobs it makes available are locked first too (see lockFlowKeys).
 */
export function resolveDependents(source: string): string {
  const doomedSet = { state: 'l.doom', finalized_at: 'now()', errors: appendError(`'${DEPENDENCY_ENDED_TEXT}'`) };
  return `wf_ended AS (
    SELECT s.id, s.state, s.output FROM ${source} s
     WHERE s.workflow_id IS NOT NULL AND s.state IN ('completed', 'failed', 'cancelled', 'deleted')
  ), wf_doomed AS (
    WITH RECURSIVE walk(id, policy) AS (
      SELECT d.id, d.policy FROM wf_ended x CROSS JOIN LATERAL ${DOOMED_DEPENDENTS('x.id')} d
       WHERE x.state <> 'completed'
      UNION
      SELECT d.id, d.policy FROM walk w CROSS JOIN LATERAL ${DOOMED_DEPENDENTS('w.id')} d
    )
    SELECT w.id, CASE WHEN bool_or(w.policy = 'fail') THEN 'failed' ELSE 'cancelled' END AS state
      FROM walk w WHERE w.id NOT IN (SELECT src.id FROM ${source} src)
     GROUP BY w.id
  ), wf_resolved AS (
    UPDATE awa.job_dependencies e SET state = x.state, output = x.output, resolved_at = now()
      FROM (SELECT id, state, output FROM wf_ended UNION ALL SELECT id, state, NULL::jsonb FROM wf_doomed) x
     WHERE e.dependency_id = ANY(ARRAY(SELECT id FROM wf_ended UNION ALL SELECT id FROM wf_doomed))
       AND e.dependency_id = x.id AND e.state IS NULL
    RETURNING e.dependent_id, e.policy, e.state
  ), wf_counts AS (
    SELECT r.dependent_id AS id, count(*)::int AS n FROM wf_resolved r
     WHERE (r.state = 'completed' OR r.policy = 'ignore')
       AND r.dependent_id NOT IN (SELECT id FROM wf_doomed) AND r.dependent_id NOT IN (SELECT src.id FROM ${source} src)
     GROUP BY r.dependent_id
  ), wf_locked AS (
    SELECT j.id, j.state, j.waiting_on, j.queue, j.concurrency_key, t.n, t.doom
      FROM (SELECT id, n, NULL::text AS doom FROM wf_counts UNION ALL SELECT id, NULL::int, state FROM wf_doomed
             ORDER BY id) t
     CROSS JOIN LATERAL (
       SELECT j.id, j.state, j.waiting_on, j.queue, j.concurrency_key FROM awa.jobs j WHERE j.id = t.id FOR UPDATE
     ) j
  ), wf_keys_locked AS (${lockFlowKeys(
    "(SELECT queue, concurrency_key FROM wf_locked WHERE n IS NOT NULL AND state = 'waiting' AND waiting_on <= n)",
  )}
  ), wf_unblocked AS (
    UPDATE awa.jobs j
       SET waiting_on = greatest(j.waiting_on - l.n, 0),
           state = CASE WHEN j.waiting_on > l.n THEN 'waiting' WHEN j.run_at > now() THEN 'scheduled' ELSE 'available' END,
           run_at = CASE WHEN j.waiting_on > l.n THEN j.run_at ELSE greatest(j.run_at, now()) END
      FROM wf_locked l
     WHERE j.id = l.id AND l.n IS NOT NULL AND l.state = 'waiting' AND j.state = 'waiting'
    RETURNING j.id
  ), wf_doomed_moved AS (
    DELETE FROM awa.jobs j USING wf_locked l
     WHERE j.id = l.id AND l.doom IS NOT NULL AND l.state = 'waiting' AND j.state = 'waiting'
    RETURNING ${jobRowAfter(doomedSet)}
  ), wf_doomed_archived AS (${archiveRows('wf_doomed_moved')}
  ), wf_doomed_events AS (${recordJobEvents('wf_doomed_moved')}
  )`;
}

/** The source of resolveDependents for a DELETE's RETURNING id, workflow_id (`deleted`): a deletion ends them. */
export const deletedSource = (deleted: string) =>
  `(SELECT id, 'deleted'::text AS state, NULL::jsonb AS output, workflow_id FROM ${deleted})`;

/**
 * Inserts a workflow's jobs and edges in one statement: $1 a JSON array of jobs as insertJobsLarge takes
 * them plus `waiting_on` (their dependency count; above 0 they start `waiting`), in input order; $2
 * the workflow id; $3 a JSON array of edges {dependent, dependency (input positions from 0), ref,
 * policy}. Ids come back in input order (identity values are drawn in insert order). The insert
 * trigger NOTIFYs the queues of the jobs that start available. A unique job (unique_key, unique_period,
 * unique_states as insertUniqueJobs takes them) also blocks while `waiting`; a job holding its key makes
 * the whole statement fail with a unique violation of jobs_unique_idx (no ON CONFLICT: a workflow is
 * inserted whole or not at all), whose detail names the key.
 */
export const insertGraph = statement<[jobsJson: string, workflowId: string, edgesJson: string], { id: string }>(
  'workflow_insert_graph',
  `
  WITH input AS (
    SELECT t.*, row_number() OVER () - 1 AS ord
      FROM json_to_recordset($1::json)
        AS t(kind text, queue text, args jsonb, priority smallint, max_attempts integer, run_at timestamptz,
             tags text[], concurrency_key text, traceparent text, waiting_on integer, unique_key text,
             unique_period bigint, unique_states text[])
  ), inserted AS (
    INSERT INTO awa.jobs (kind, queue, args, priority, max_attempts, run_at, state, tags, concurrency_key, traceparent,
                          workflow_id, waiting_on, unique_key, unique_states)
    SELECT t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.priority, t.max_attempts, coalesce(t.run_at, now()),
           CASE WHEN t.waiting_on > 0 THEN 'waiting' WHEN t.run_at > now() THEN 'scheduled' ELSE 'available' END,
           coalesce(t.tags, '{}'), t.concurrency_key, t.traceparent, $2::uuid, t.waiting_on,
           CASE WHEN t.unique_period IS NULL THEN t.unique_key
                ELSE t.unique_key || ':' || floor(extract(epoch FROM now()) * 1000 / t.unique_period)::bigint END,
           CASE WHEN t.unique_key IS NOT NULL THEN t.unique_states || '{waiting}'::text[] END
      FROM input t ORDER BY t.ord
    RETURNING id
  ), ids AS (
    SELECT id, row_number() OVER (ORDER BY id) - 1 AS ord FROM inserted
  ), edges AS (
    INSERT INTO awa.job_dependencies (dependent_id, dependency_id, workflow_id, ref, policy)
    SELECT a.id, b.id, $2::uuid, e.ref, e.policy
      FROM json_to_recordset($3::json) AS e(dependent integer, dependency integer, ref text, policy text)
      JOIN ids a ON a.ord = e.dependent
      JOIN ids b ON b.ord = e.dependency
  )
  SELECT id::text FROM ids ORDER BY ord`,
);

/** One dependency of a job as its handler reads it. */
export interface DependencyResultRow {
  ref: string;
  id: string;
  /** Its ending once resolved (`deleted` if it was deleted), else its current state. */
  state: JobState | 'deleted';
  output: unknown;
}

/**
 * The dependencies of job $1 by ref, after ref $2 ('' : from the first), at most $3: each edge's stored
 * ending and output (kept on the edge, so retention of the dependency does not lose them).
 */
export const dependencyResults = statement<[id: string, afterRef: string, limit: number], DependencyResultRow>(
  'workflow_dependency_results',
  `
  SELECT e.ref, e.dependency_id::text AS id,
         coalesce(e.state, (SELECT a.state FROM awa.all_jobs a WHERE a.id = e.dependency_id), 'deleted') AS state,
         e.output
    FROM awa.job_dependencies e
   WHERE e.dependent_id = $1::bigint AND e.ref > $2
   ORDER BY e.ref
   LIMIT $3`,
);

/**
 * Deletes up to $1 edges whose dependent is gone from both tables (rotated out of awa.job_history, or
 * deleted): nothing reads them any more. A waiting dependent is in awa.jobs, so its edges stay, and
 * so do the outputs stored on them. Each edge costs two primary-key probes; run after a rotation.
 */
export const pruneEdges = statement<[limit: number], { pruned: number }>(
  'workflow_prune_edges',
  `
  WITH gone AS (
    SELECT e.dependent_id, e.dependency_id FROM awa.job_dependencies e
     WHERE NOT EXISTS (SELECT FROM awa.jobs j WHERE j.id = e.dependent_id)
       AND NOT EXISTS (SELECT FROM awa.job_history h WHERE h.id = e.dependent_id)
     LIMIT $1
  ), pruned AS (
    DELETE FROM awa.job_dependencies e USING gone g
     WHERE e.dependent_id = g.dependent_id AND e.dependency_id = g.dependency_id
    RETURNING 1
  )
  SELECT count(*)::int AS pruned FROM pruned`,
);

/**
 * Steps added by a running handler (job.addSteps), first statement of its completion's transaction:
 * locks attempt ($1 id, $2 lease) if it still holds its lease, and returns its workflow and whether a
 * cancel was requested. Nothing: the attempt lost its lease, and nothing of its steps may land.
 */
export const lockAttempt = statement<
  [id: string, runLease: string],
  { workflow_id: string | null; cancel_requested: boolean }
>(
  'workflow_lock_attempt',
  `
  SELECT j.workflow_id::text, l.cancel_requested
    FROM awa.jobs j JOIN awa.active_leases l ON l.job_id = j.id AND l.run_lease = j.run_lease
   WHERE j.id = $1::bigint AND j.run_lease = $2::bigint AND j.state = 'running'
     FOR UPDATE OF j, l`,
);

/**
 * Makes the waiting dependents of job $1 also wait for steps $2 (ids) named $3 (refs) of workflow $4,
 * each edge with the policy of the dependent's edge to job $1; their counts grow by as many. Run
 * before job $1's completion in the same transaction, so no dependent is available in between.
 */
export const waitForSteps = statement<[id: string, stepIds: string[], refs: string[], workflowId: string]>(
  'workflow_wait_for_steps',
  `
  WITH dependents AS (
    SELECT e.dependent_id, e.policy FROM awa.job_dependencies e
      JOIN awa.jobs d ON d.id = e.dependent_id AND d.state = 'waiting'
     WHERE e.dependency_id = $1::bigint AND e.state IS NULL
     ORDER BY e.dependent_id FOR UPDATE OF d
  ), edges AS (
    INSERT INTO awa.job_dependencies (dependent_id, dependency_id, workflow_id, ref, policy)
    SELECT d.dependent_id, s.id, $4::uuid, s.ref, d.policy
      FROM dependents d CROSS JOIN unnest($2::bigint[], $3::text[]) AS s(id, ref)
  )
  UPDATE awa.jobs j SET waiting_on = j.waiting_on + cardinality($2::bigint[])
    FROM dependents d WHERE j.id = d.dependent_id`,
);
