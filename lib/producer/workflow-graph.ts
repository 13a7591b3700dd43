import { EnqueueValidationError } from '../errors/enqueue-validation.error.js';
import type { EnqueueManyItem } from '../interfaces/job.interface.js';
import { MAX_GRAPH_EDGES, MAX_GRAPH_JOBS, type FlowJob } from '../interfaces/workflow.interface.js';
import { type DependencyFailurePolicy, type GraphJob, type GraphOptions } from '../interfaces/job.interface.js';
import { checkEnqueueOptions, jobObject, type EncodedJob } from './enqueue-validator.js';
import { WorkflowMessages } from './workflow.messages.js';

/** The keys of enqueueGraph's options. */
export const GRAPH_OPTION_KEYS = Object.keys({ manager: 1, onDependencyFailure: 1 } satisfies Record<
  keyof GraphOptions,
  1
>);
const POLICIES: readonly DependencyFailurePolicy[] = ['cancel', 'fail', 'ignore'];
const FINAL: readonly unknown[] = ['completed', 'failed', 'cancelled'];

/** One edge of insertGraph: input positions of the dependent and its dependency. */
export interface GraphEdge {
  dependent: number;
  dependency: number;
  ref: string;
  policy: DependencyFailurePolicy;
}

/** A checked graph: the jobs as enqueueMany items (in input order), their dependency counts, the edges. */
export interface CheckedGraph {
  refs: string[];
  items: EnqueueManyItem[];
  waitingOn: number[];
  edges: GraphEdge[];
}

/**
 * Checks a graph before the database: refs (present, unique), dependsOn (known refs, each once),
 * policies, no cycle, the size limits; each error names the ref (and carries the job's index). The
 * job options themselves are checked by encodeJob, as for enqueueMany. `unique`: enqueueGraph's jobs may
 * set it (without `replace`); job.addSteps' may not (a conflict would fail the attempt's completion).
 */
export function checkGraph(jobs: unknown, options: GraphOptions, { unique = false } = {}): CheckedGraph {
  if (!Array.isArray(jobs)) throw new EnqueueValidationError('jobs', WorkflowMessages.graphNotArray());
  checkEnqueueOptions(options, GRAPH_OPTION_KEYS);
  const defaultPolicy = options.onDependencyFailure ?? 'cancel';
  if (!POLICIES.includes(defaultPolicy))
    throw new EnqueueValidationError('onDependencyFailure', WorkflowMessages.policyInvalid(undefined));
  if (jobs.length === 0) throw new EnqueueValidationError('jobs', WorkflowMessages.graphEmpty());
  if (jobs.length > MAX_GRAPH_JOBS)
    throw new EnqueueValidationError('jobs', WorkflowMessages.graphTooLarge(jobs.length));

  const position = new Map<string, number>();
  const graph = jobs as GraphJob[];
  graph.forEach((job, i) => {
    if (job === null || typeof job !== 'object') checkEnqueueOptions(job, [], i);
    const { ref } = job;
    if (typeof ref !== 'string' || ref.length < 1 || ref.length > 200)
      throw new EnqueueValidationError('ref', WorkflowMessages.refInvalid(), i);
    if (position.has(ref)) throw new EnqueueValidationError('ref', WorkflowMessages.refDuplicate(ref), i);
    position.set(ref, i);
  });

  const edges: GraphEdge[] = [];
  const waitingOn: number[] = [];
  const items = graph.map((job, i): EnqueueManyItem => {
    const { ref, dependsOn = [], onDependencyFailure, ...item } = job;
    const policy = onDependencyFailure ?? defaultPolicy;
    if (!POLICIES.includes(policy))
      throw new EnqueueValidationError('onDependencyFailure', WorkflowMessages.policyInvalid(ref), i);
    if ('unique' in item && !unique) throw new EnqueueValidationError('unique', WorkflowMessages.uniqueInSteps(ref), i);
    // A duplicate is not skipped in a workflow (its dependents would lose it): nothing to replace.
    const uniqueOptions = item.unique as { replace?: unknown; states?: unknown } | undefined;
    if (unique && uniqueOptions?.replace === true)
      throw new EnqueueValidationError('unique.replace', WorkflowMessages.uniqueReplaceInGraph(ref), i);
    // A finished workflow job must leave awa.jobs (retryWorkflow and the ended-workflow count read history).
    if (unique && Array.isArray(uniqueOptions?.states) && uniqueOptions.states.some((s) => FINAL.includes(s)))
      throw new EnqueueValidationError('unique.states', WorkflowMessages.uniqueFinalInGraph(ref), i);
    if (!Array.isArray(dependsOn))
      throw new EnqueueValidationError('dependsOn', WorkflowMessages.dependsOnInvalid(ref), i);
    const seen = new Set<string>();
    for (const dep of dependsOn as unknown[]) {
      const at = typeof dep === 'string' ? position.get(dep) : undefined;
      if (at === undefined)
        throw new EnqueueValidationError('dependsOn', WorkflowMessages.dependsOnUnknown(ref, String(dep)), i);
      if (seen.has(dep as string))
        throw new EnqueueValidationError('dependsOn', WorkflowMessages.dependsOnDuplicate(ref, dep as string), i);
      seen.add(dep as string);
      edges.push({ dependent: i, dependency: at, ref: dep as string, policy });
    }
    waitingOn.push(seen.size);
    return item;
  });
  if (edges.length > MAX_GRAPH_EDGES)
    throw new EnqueueValidationError('dependsOn', WorkflowMessages.graphTooManyEdges(edges.length));
  const cycle = findCycle(graph.length, edges);
  if (cycle) {
    const refs = cycle.map((i) => graph[i]!.ref);
    throw new EnqueueValidationError('dependsOn', WorkflowMessages.cycle(refs), cycle[0]);
  }
  return { refs: graph.map((j) => j.ref), items, waitingOn, edges };
}

/** A cycle of the graph (positions, each waiting for the next), or undefined. Iterative: deep chains are fine. */
function findCycle(size: number, edges: readonly GraphEdge[]): number[] | undefined {
  const deps: number[][] = Array.from({ length: size }, () => []);
  for (const e of edges) deps[e.dependent]!.push(e.dependency);
  // 0 unvisited, 1 on the current path, 2 done.
  const mark = new Uint8Array(size);
  for (let start = 0; start < size; start++) {
    if (mark[start]) continue;
    const path: number[] = [start];
    const next: number[] = [0];
    mark[start] = 1;
    while (path.length > 0) {
      const node = path[path.length - 1]!;
      const k = next[next.length - 1]!;
      if (k >= deps[node]!.length) {
        mark[node] = 2;
        path.pop();
        next.pop();
        continue;
      }
      next[next.length - 1] = k + 1;
      const dep = deps[node]![k]!;
      if (mark[dep] === 1) return path.slice(path.indexOf(dep));
      if (mark[dep] === 0) {
        mark[dep] = 1;
        path.push(dep);
        next.push(0);
      }
    }
  }
  return undefined;
}

/**
 * A flow (tree) as a graph: each node depends on its children, which come before it (post-order);
 * refs default to the node's path (`root`, `root.0`, ...). Iterative, so any depth fits.
 */
export function flowToGraph(root: FlowJob): { jobs: GraphJob[]; rootRef: string } {
  const jobs: GraphJob[] = [];
  let count = 0;
  const check = (node: FlowJob, path: string): void => {
    if (node === null || typeof node !== 'object' || (node.children !== undefined && !Array.isArray(node.children)))
      throw new EnqueueValidationError('children', WorkflowMessages.flowInvalid(path));
    if (++count > MAX_GRAPH_JOBS) throw new EnqueueValidationError('jobs', WorkflowMessages.graphTooLarge(count));
  };
  interface Frame {
    node: FlowJob;
    path: string;
    deps: string[];
    next: number;
  }
  check(root, 'root');
  const stack: Frame[] = [{ node: root, path: 'root', deps: [], next: 0 }];
  let rootRef = 'root';
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const children = top.node.children ?? [];
    if (top.next < children.length) {
      const path = `${top.path}.${top.next}`;
      const child = children[top.next++]!;
      check(child, path);
      stack.push({ node: child, path, deps: [], next: 0 });
      continue;
    }
    stack.pop();
    const { children: _children, ref, ...job } = top.node;
    const own = ref ?? top.path;
    jobs.push({ ...job, ref: own, ...(top.deps.length > 0 ? { dependsOn: top.deps } : {}) });
    if (stack.length > 0) stack[stack.length - 1]!.deps.push(own);
    else rootRef = own;
  }
  return { jobs, rootRef };
}

/** insertGraph's JSON array of jobs: the encoded jobs, each with its dependency count (and the traceparent). */
export function graphPayload(
  encoded: readonly EncodedJob[],
  waitingOn: readonly number[],
  traceparent?: string,
): string {
  return `[${encoded.map((e, i) => jobObject(e, traceparent, `"waiting_on":${waitingOn[i]}`)).join(',')}]`;
}
