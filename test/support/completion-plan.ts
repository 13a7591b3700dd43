import type pg from 'pg';
import { workerSql } from '../../lib/sql/index.js';
import { explainedPlan, planNodes, type PlanNode } from './query-plan.js';

/** Rows a plan read from `tables` (of schema awa): each scan's loops × (rows kept + filtered out). */
export const examinedRows = (plan: PlanNode, tables: readonly string[] = ['jobs', 'job_dependencies']): number =>
  planNodes(plan)
    .filter((n) => n['Node Type'] !== 'ModifyTable' && tables.includes(n['Relation Name'] ?? ''))
    .reduce(
      (sum, n) =>
        sum +
        Number(n['Actual Loops'] ?? 0) * (Number(n['Actual Rows'] ?? 0) + Number(n['Rows Removed by Filter'] ?? 0)),
      0,
    );

/** Every way a completion may be planned: custom or generic, with statistics taken or not (it.each rows). */
export const PLAN_CASES = [
  ['custom', false],
  ['generic', false],
  ['custom', true],
  ['generic', true],
] as const;

/**
 * EXPLAIN ANALYZE of completeJobs of `jobs` on `client`, rolled back: as a custom plan (the values
 * inlined) or the generic one a prepared statement settles on; `analyzed`: statistics taken first.
 */
export async function explainCompletion(
  client: pg.Client,
  jobs: ReadonlyArray<{ id: string; runLease: string }>,
  mode: 'custom' | 'generic',
  analyzed: boolean,
): Promise<PlanNode> {
  await client.query('BEGIN');
  try {
    if (analyzed) await client.query('ANALYZE awa.jobs, awa.job_dependencies');
    const ids = `'{${jobs.map((j) => j.id).join(',')}}'`;
    const leases = `'{${jobs.map((j) => j.runLease).join(',')}}'`;
    let text = `EXPLAIN (ANALYZE, FORMAT JSON) ${workerSql.completeJobs.text}`;
    if (mode === 'generic') {
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE awa_completion AS ${workerSql.completeJobs.text}`);
      text = `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE awa_completion(${ids}, ${leases})`;
    } else {
      text = text.replaceAll('$1::bigint[]', `${ids}::bigint[]`).replaceAll('$2::bigint[]', `${leases}::bigint[]`);
    }
    const { rows } = await client.query(text);
    return explainedPlan(rows);
  } finally {
    await client.query('ROLLBACK');
    await client.query('DEALLOCATE ALL');
  }
}
