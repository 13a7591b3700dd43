import type { JobState } from '../interfaces/job.interface.js';
import type { DependencyPolicy } from './workflow.sql.js';
import { statement } from './sql-statement.js';
import { JOB_TABLE_COLUMNS, jobRowAfter } from './job-row.sql.js';
import { lockFlowKeys } from './flow-keys.sql.js';

/** A workflow's state from its jobs: running while any is unfinished, then failed, cancelled or completed. */
export type WorkflowState = 'running' | 'completed' | 'failed' | 'cancelled';

/** One workflow, summed up. */
export interface WorkflowSummaryRow {
  workflow_id: string;
  state: WorkflowState;
  jobs: number;
  /** The id of its first job: the cursor of listWorkflows. */
  first_id: string;
  created_at: Date;
  /** When its last job ended, once all have. */
  finished_at: Date | null;
}

const SUMMARY = `
    SELECT workflow_id::text, min(id)::text AS first_id, count(*)::int AS jobs, min(created_at) AS created_at,
           CASE WHEN bool_or(state NOT IN ('completed', 'failed', 'cancelled')) THEN NULL ELSE max(finalized_at) END
             AS finished_at,
           CASE WHEN bool_or(state NOT IN ('completed', 'failed', 'cancelled')) THEN 'running'
                WHEN bool_or(state = 'failed') THEN 'failed'
                WHEN bool_or(state = 'cancelled') THEN 'cancelled' ELSE 'completed' END AS state
      FROM awa.all_jobs`;

/** Workflow $1, summed up (nothing if it has no job left). */
export const workflowSummary = statement<[workflowId: string], WorkflowSummaryRow>(
  'workflow_summary',
  `${SUMMARY} WHERE workflow_id = $1::uuid GROUP BY workflow_id`,
);

/**
 * Workflows in state $1 (null: any) whose first job id is below $2, newest first, at most $3. It
 * groups every job that has a workflow (awa.all_jobs, by the workflow indexes): an admin read, not a
 * hot path.
 */
export const listWorkflows = statement<
  [state: WorkflowState | null, before: string, limit: number],
  WorkflowSummaryRow
>(
  'workflow_list',
  `
  WITH w AS (${SUMMARY} WHERE workflow_id IS NOT NULL GROUP BY workflow_id)
  SELECT * FROM w WHERE ($1::text IS NULL OR state = $1) AND first_id::bigint < $2::bigint
   ORDER BY first_id::bigint DESC LIMIT $3`,
);

/** One job of a workflow. */
export interface WorkflowJobRow {
  id: string;
  kind: string;
  queue: string;
  state: JobState;
  attempt: number;
  /** Dependencies it still waits for. */
  waiting_on: number;
  created_at: Date;
  finalized_at: Date | null;
}

/** Up to $2 jobs of workflow $1, by id. */
export const workflowJobs = statement<[workflowId: string, limit: number], WorkflowJobRow>(
  'workflow_jobs',
  `
  SELECT id::text, kind, queue, state, attempt, waiting_on, created_at, finalized_at
    FROM awa.all_jobs WHERE workflow_id = $1::uuid ORDER BY id LIMIT $2`,
);

/** One dependency edge of a workflow. */
export interface WorkflowEdgeRow {
  dependent_id: string;
  dependency_id: string;
  ref: string;
  policy: DependencyPolicy;
  /** The dependency's ending once it resolved the edge, else null. */
  state: 'completed' | 'failed' | 'cancelled' | 'deleted' | null;
}

/** Up to $2 edges of workflow $1. */
export const workflowEdges = statement<[workflowId: string, limit: number], WorkflowEdgeRow>(
  'workflow_edges',
  `
  SELECT dependent_id::text, dependency_id::text, ref, policy, state
    FROM awa.job_dependencies WHERE workflow_id = $1::uuid ORDER BY dependent_id, ref LIMIT $2`,
);

/**
 * Retries the failed and cancelled jobs of workflow $1 as a workflow: each goes back into awa.jobs
 * (a unique workflow job blocks in the four unfinished states and waiting only, so every finished one is
 * in awa.job_history; a held key fails the statement: nothing is retried), its attempts
 * restarted, and waits again for its dependencies that are retried with it or still unresolved;
 * the edges between retried jobs are reopened. Those without such dependencies are available at
 * once (the insert trigger NOTIFYs their queues). Key rows: see lockFlowKeys. Completed jobs stay completed (their outputs stay on the edges); an edge a dependent has
 * already consumed is never reopened, so no count is decremented twice. Returns how many were retried.
 */
export const retryWorkflow = statement<[workflowId: string], { retried: number }>(
  'workflow_retry',
  `
  WITH targets AS (
    SELECT id FROM awa.job_history WHERE workflow_id = $1::uuid AND state IN ('failed', 'cancelled') FOR UPDATE
  ), unmet AS (
    SELECT e.dependent_id AS id, count(*)::int AS n FROM awa.job_dependencies e
     WHERE e.dependent_id IN (SELECT id FROM targets)
       AND (e.state IS NULL OR e.dependency_id IN (SELECT id FROM targets))
     GROUP BY e.dependent_id
  ), reopened AS (
    UPDATE awa.job_dependencies e SET state = NULL, output = NULL, resolved_at = NULL
     WHERE e.dependency_id IN (SELECT id FROM targets) AND e.dependent_id IN (SELECT id FROM targets)
  ), unarchived AS (
    DELETE FROM awa.job_history j USING targets t LEFT JOIN unmet u ON u.id = t.id
     WHERE j.id = t.id
    RETURNING ${jobRowAfter({
      state: `CASE WHEN coalesce(u.n, 0) > 0 THEN 'waiting' ELSE 'available' END`,
      waiting_on: 'coalesce(u.n, 0)',
      attempt: '0',
      run_at: 'now()',
      finalized_at: 'NULL::timestamptz',
      snoozes: '0',
      progress: 'NULL::jsonb',
      output: 'NULL::jsonb',
      shutdown_releases: '0',
    })}
  ), restored AS (
    INSERT INTO awa.jobs (${JOB_TABLE_COLUMNS.join(', ')}) SELECT * FROM unarchived
    RETURNING queue, state, concurrency_key
  ), keys_locked AS (${lockFlowKeys("(SELECT * FROM restored WHERE state = 'available')")}
  )
  SELECT (SELECT count(*) FROM restored)::int AS retried`,
);

/** A job's dependency or dependent, as the dashboard's job page lists it. */
export interface JobLinkRow {
  side: 'dependency' | 'dependent';
  id: string;
  ref: string;
  policy: DependencyPolicy;
  kind: string | null;
  /** Its state now (`deleted` if it is gone). */
  state: JobState | 'deleted';
}

/** Up to $2 dependencies and up to $2 dependents of job $1, with their states now. */
export const jobLinks = statement<[id: string, limit: number], JobLinkRow>(
  'workflow_job_links',
  `
  (SELECT 'dependency' AS side, e.dependency_id::text AS id, e.ref, e.policy, a.kind,
          coalesce(a.state, 'deleted') AS state
     FROM awa.job_dependencies e LEFT JOIN awa.all_jobs a ON a.id = e.dependency_id
    WHERE e.dependent_id = $1::bigint ORDER BY e.ref LIMIT $2)
  UNION ALL
  (SELECT 'dependent', e.dependent_id::text, e.ref, e.policy, a.kind, coalesce(a.state, 'deleted')
     FROM awa.job_dependencies e LEFT JOIN awa.all_jobs a ON a.id = e.dependent_id
    WHERE e.dependency_id = $1::bigint ORDER BY e.dependent_id LIMIT $2)`,
);
