import type { EntityManager } from 'typeorm';
import type { EnqueueManyItem, JobState } from './job.interface.js';

/**
 * What a job does when one of its dependencies ends other than `completed` (failed, cancelled,
 * deleted): `cancel` ends it cancelled, `fail` ends it failed (both cascade to its own dependents by
 * their policies), `ignore` counts that dependency as done (the job runs and sees its ending in
 * `job.dependencyResults()`).
 */
export type DependencyFailurePolicy = 'cancel' | 'fail' | 'ignore';

/** The most jobs one enqueueGraph or enqueueFlow call takes. */
export const MAX_GRAPH_JOBS = 20_000;
/** The most dependency edges one call takes. */
export const MAX_GRAPH_EDGES = 100_000;

/** One job of enqueueGraph: an enqueueMany item (every option but `unique`) with a ref and its dependencies. */
export interface GraphJob<TArgs = unknown> extends Omit<EnqueueManyItem<TArgs>, 'unique'> {
  /** Names the job within the graph (1-200 characters, unique in it). */
  ref: string;
  /** Refs of the jobs this one waits for; it runs once they have all ended. */
  dependsOn?: readonly string[];
  /** For this job's dependencies. Default: the graph's, else 'cancel'. */
  onDependencyFailure?: DependencyFailurePolicy;
}

export interface GraphOptions {
  /** The caller's EntityManager: the whole graph commits or rolls back with its transaction. */
  manager?: EntityManager;
  /** The policy of the jobs that set none. Default 'cancel'. */
  onDependencyFailure?: DependencyFailurePolicy;
}

/** What enqueueGraph returns. */
export interface EnqueuedGraph {
  /** Carried by every job of the graph (and the steps its handlers add). */
  workflowId: string;
  /** Job ids by ref. */
  ids: Record<string, string>;
}

/** One node of enqueueFlow: a job and the children it waits for (they run first). */
export interface FlowJob<TArgs = unknown> extends Omit<GraphJob<TArgs>, 'ref' | 'dependsOn'> {
  /** Default: its path from the root, `root`, `root.0`, `root.0.1`, ... */
  ref?: string;
  children?: ReadonlyArray<FlowJob>;
}

/** What enqueueFlow returns: the graph, and the id of the root job (which runs last). */
export interface EnqueuedFlow extends EnqueuedGraph {
  id: string;
}

/** One dependency of a job, as `job.dependencyResults()` gives it. */
export interface DependencyResult<TOutput = unknown> {
  ref: string;
  id: string;
  /** How it ended (`deleted` if it was deleted); a job reading it can only see ended ones. */
  state: JobState | 'deleted';
  /** Its handler's return value if it completed with one, else null. */
  output: TOutput | null;
}

/** Options of `job.dependencyResults()`: a page of at most `limit` (default and max 1000) after ref `after`. */
export interface DependencyResultsOptions {
  limit?: number;
  after?: string;
}
