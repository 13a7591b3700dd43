import type { AwaDatabase } from '../database/awa-database.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { DependencyFailurePolicy } from '../interfaces/job.interface.js';
import { FIRST_CURSOR } from '../sql/admin.sql.js';
import * as workflowAdminSql from '../sql/workflow-admin.sql.js';
import type { WorkflowState, WorkflowSummaryRow } from '../sql/workflow-admin.sql.js';
import { checkPlainObject, checkWorkflowId, isJobId } from './job-filter.js';
import { checkPageLimit, JOB_PAGE_DEFAULT } from './queue-admin.limits.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import { UniqueConflictError } from '../errors/unique-conflict.error.js';
import { AdminMessages } from '../awa.messages.js';

export type { WorkflowState };

/** The most jobs, and the most edges, getWorkflow returns of one workflow. */
export const WORKFLOW_READ_MAX = 20_000;

/** A workflow as QueueAdmin lists it. */
export interface WorkflowSummary {
  id: string;
  /** running while any job is unfinished; then failed if any failed, cancelled if any was cancelled, else completed. */
  state: WorkflowState;
  jobs: number;
  createdAt: Date;
  /** When its last job ended, once all have. */
  finishedAt: Date | null;
}

/** A workflow as QueueAdmin.getWorkflow returns it: its jobs and its dependency edges. */
export interface WorkflowView extends WorkflowSummary {
  jobs: number;
  jobList: Array<{
    id: string;
    kind: string;
    queue: string;
    state: JobState;
    attempt: number;
    /** Dependencies it still waits for. */
    waitingOn: number;
    createdAt: Date;
    finalizedAt: Date | null;
  }>;
  edges: Array<{
    dependentId: string;
    dependencyId: string;
    /** The dependency's ref, as the dependent names it. */
    ref: string;
    policy: DependencyFailurePolicy;
    /** How the dependency ended, once it resolved the edge; null while it has not. */
    state: 'completed' | 'failed' | 'cancelled' | 'deleted' | null;
  }>;
}

/**
 * Where QueueAdmin's workflow calls look, with several AwaModules (docs/multiple-databases.md): in the
 * named module's database alone; without `module`, in every module's (a workflow lives in one).
 */
export interface WorkflowLocation {
  /** A named module's name. */
  module?: string;
}

/** listWorkflows' options: a state, and a page (`after`: the previous page's `next`). */
export interface WorkflowListOptions {
  /** The named module whose workflows to list; default: the default module's. */
  module?: string;
  state?: WorkflowState;
  after?: string;
  /** 1 to 500, default 50. */
  limit?: number;
}

export interface WorkflowPage {
  workflows: WorkflowSummary[];
  next: string | null;
}

const WORKFLOW_STATES: readonly WorkflowState[] = ['running', 'completed', 'failed', 'cancelled'];

const summary = (row: WorkflowSummaryRow): WorkflowSummary => ({
  id: row.workflow_id,
  state: row.state,
  jobs: row.jobs,
  createdAt: row.created_at,
  finishedAt: row.finished_at,
});

/** Whether a job of workflow `id` is in the database (checked id). */
export async function hasWorkflow(db: AwaDatabase, id: string): Promise<boolean> {
  return (await db.query(workflowAdminSql.workflowSummary, [id])).length > 0;
}

/** QueueAdmin.getWorkflow. */
export async function readWorkflow(db: AwaDatabase, id: string): Promise<WorkflowView | null> {
  checkWorkflowId(id, 'workflowId');
  const [row] = await db.query(workflowAdminSql.workflowSummary, [id]);
  if (!row) return null;
  const [jobs, edges] = await Promise.all([
    db.query(workflowAdminSql.workflowJobs, [id, WORKFLOW_READ_MAX]),
    db.query(workflowAdminSql.workflowEdges, [id, WORKFLOW_READ_MAX]),
  ]);
  return {
    ...summary(row),
    jobList: jobs.map((j) => ({
      id: j.id,
      kind: j.kind,
      queue: j.queue,
      state: j.state,
      attempt: j.attempt,
      waitingOn: j.waiting_on,
      createdAt: j.created_at,
      finalizedAt: j.finalized_at,
    })),
    edges: edges.map((e) => ({
      dependentId: e.dependent_id,
      dependencyId: e.dependency_id,
      ref: e.ref,
      policy: e.policy,
      state: e.state,
    })),
  };
}

/** QueueAdmin.listWorkflows. */
export async function listWorkflowPage(db: AwaDatabase, options: WorkflowListOptions): Promise<WorkflowPage> {
  const o = checkPlainObject(options, 'options', ['module', 'state', 'after', 'limit']) as WorkflowListOptions;
  if (o.state !== undefined && !WORKFLOW_STATES.includes(o.state))
    throw new AdminValidationError(
      'options.state',
      AdminMessages.badState('options.state', String(o.state), WORKFLOW_STATES),
    );
  if (o.after !== undefined && !isJobId(o.after))
    throw new AdminValidationError('options.after', AdminMessages.badId('options.after'));
  const limit = o.limit ?? JOB_PAGE_DEFAULT;
  checkPageLimit(limit);
  const rows = await db.query(workflowAdminSql.listWorkflows, [o.state ?? null, o.after ?? FIRST_CURSOR, limit + 1]);
  const page = rows.slice(0, limit);
  return { workflows: page.map(summary), next: rows.length > limit ? page[page.length - 1]!.first_id : null };
}

/** QueueAdmin.retryWorkflow. */
export async function retryWorkflowJobs(db: AwaDatabase, id: string): Promise<{ retried: number }> {
  checkWorkflowId(id, 'workflowId');
  try {
    const [row] = await db.query(workflowAdminSql.retryWorkflow, [id]);
    return { retried: row?.retried ?? 0 };
  } catch (error) {
    // A unique job of it whose key another job took meanwhile: the statement retried nothing.
    if ((error as { code?: unknown; constraint?: unknown }).constraint !== 'jobs_unique_idx') throw error;
    throw new UniqueConflictError(1, { ref: undefined, cause: error, retry: true });
  }
}
