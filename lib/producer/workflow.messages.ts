import { MAX_GRAPH_EDGES, MAX_GRAPH_JOBS } from '../interfaces/workflow.interface.js';

/** The messages of workflow input errors (EnqueueValidationError), each naming the ref at fault. */
export const WorkflowMessages = {
  graphNotArray: () => 'nestjs-awa: enqueueGraph takes an array of jobs, each { ref, kind, args, dependsOn?, ... }.',
  graphEmpty: () => 'nestjs-awa: a workflow needs at least one job.',
  graphTooLarge: (jobs: number) =>
    `nestjs-awa: a workflow of ${jobs} jobs is over the limit of ${MAX_GRAPH_JOBS} per call (MAX_GRAPH_JOBS).`,
  graphTooManyEdges: (edges: number) =>
    `nestjs-awa: a workflow of ${edges} dependencies is over the limit of ${MAX_GRAPH_EDGES} per call (MAX_GRAPH_EDGES).`,
  refInvalid: () => 'nestjs-awa: each workflow job needs a `ref`, a string of 1 to 200 characters.',
  refDuplicate: (ref: string) => `nestjs-awa: two workflow jobs have the ref "${ref}"; refs are unique in a workflow.`,
  dependsOnInvalid: (ref: string) => `nestjs-awa: \`dependsOn\` of job "${ref}" must be an array of refs.`,
  dependsOnUnknown: (ref: string, missing: string) =>
    `nestjs-awa: job "${ref}" depends on "${missing}", which is not a ref of this workflow.`,
  dependsOnDuplicate: (ref: string, twice: string) => `nestjs-awa: job "${ref}" lists "${twice}" twice in dependsOn.`,
  cycle: (refs: readonly string[]) =>
    `nestjs-awa: the workflow has a cycle: ${[...refs, refs[0]].map((r) => `"${r}"`).join(' -> ')}; ` +
    'a job cannot wait for itself, even through others.',
  policyInvalid: (ref: string | undefined) =>
    `nestjs-awa: \`onDependencyFailure\`${ref === undefined ? '' : ` of job "${ref}"`} must be 'cancel', 'fail' or 'ignore'.`,
  uniqueInSteps: (ref: string) =>
    `nestjs-awa: step "${ref}" sets \`unique\`; steps added by job.addSteps cannot be unique (a conflict would ` +
    "fail the attempt's completion). enqueueGraph's jobs can.",
  uniqueReplaceInGraph: (ref: string) =>
    `nestjs-awa: job "${ref}" sets \`unique.replace\`; a workflow job is never a skipped or replacing duplicate ` +
    '(a conflict refuses the whole graph), so debounce does not apply.',
  uniqueFinalInGraph: (ref: string) =>
    `nestjs-awa: job "${ref}" lists a final state in \`unique.states\`; a workflow job blocks its key until it ` +
    'ends (the four unfinished states, and waiting), never after.',
  uniqueDuplicateInGraph: (ref: string, first: string) =>
    `nestjs-awa: jobs "${first}" and "${ref}" of the workflow have the same unique key; each would block the other.`,
  graphSpansModules: (first: string, second: string) =>
    `nestjs-awa: a workflow lives in one database: its jobs' queues must belong to one AwaModule; these go to ` +
    `queues of ${first} and ${second}. Put the workflow's queues in one module.`,
  flowInvalid: (path: string) =>
    `nestjs-awa: the flow node at ${path} must be an object { kind, args, children?, ... } and children an array.`,
};
