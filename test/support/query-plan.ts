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
