import type { GraphJob } from './job.interface.js';

/** The most jobs one enqueueGraph or enqueueFlow call takes. */
export const MAX_GRAPH_JOBS = 20_000;
/** The most dependency edges one call takes. */
export const MAX_GRAPH_EDGES = 100_000;

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
