/** A node of PostgreSQL's `EXPLAIN (FORMAT JSON)` output, with the fields the EXPLAIN tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Schema?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  'Scan Direction'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  'Conflict Arbiter Indexes'?: string[];
  Plans?: PlanNode[];
  [key: string]: unknown;
}

/** Every node of a plan, depth first. */
export const planNodes = (plan: PlanNode): PlanNode[] => [plan, ...(plan.Plans ?? []).flatMap(planNodes)];

/** "<node type>" or "<node type> <index name>": how a scan is named in a test's expectations. */
export const scanLabel = (n: PlanNode): string => `${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}`;

/** The plan of an `EXPLAIN (FORMAT JSON)` result's rows. */
export const explainedPlan = (rows: Array<Record<string, unknown>>): PlanNode =>
  (rows[0]!['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;

/** The nodes of a plan that read `table` (its writes, ModifyTable, left out). */
export const readsOf = (plan: PlanNode, table: string): PlanNode[] =>
  planNodes(plan).filter((n) => n['Relation Name'] === table && n['Node Type'] !== 'ModifyTable');
