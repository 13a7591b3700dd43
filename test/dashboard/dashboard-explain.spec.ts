import type pg from 'pg';
import * as dashboardSql from '../../lib/dashboard/dashboard.sql.js';
import { filterParams, parseFilter } from '../../lib/dashboard/dashboard.input.js';
import type { SqlStatement } from '../../lib/sql/index.js';
import { useSqlFixture } from '../sql/sql-fixture.js';
import { planNodes, type PlanNode } from '../support/query-plan.js';

const ROWS = 200_000;
/** "<node> on <table> [using <index>]" for every scan of a table. */
const scans = (plan: PlanNode) =>
  planNodes(plan)
    .filter((n) => n['Relation Name'])
    .map((n) => `${n['Node Type']} on ${n['Relation Name']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`);
const blocks = (plan: PlanNode) => (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);

/**
 * The dashboard's scans on a realistic table (200k jobs over every state, queue and tag mix, with
 * statistics), planned by PostgreSQL as it would in production: sequential scans are NOT switched off.
 */
describe('dashboard query plans on 200k jobs', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  let middleId: string;

  beforeAll(async () => {
    client = await f.client();
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, args, tags, created_at, finalized_at)
      SELECT 'kind.' || (i % 20), 'queue' || (i % 5), s.state, 1, jsonb_build_object('userId', i % 5000, 'n', i),
             CASE WHEN i % 10 = 0 THEN ARRAY['vip'] ELSE '{}' END, now() - (${ROWS} - i) * interval '1 second',
             CASE WHEN s.state IN ('completed', 'failed', 'cancelled') THEN now() - (${ROWS} - i) * interval '1 second' END
        FROM generate_series(1, ${ROWS}) i
        CROSS JOIN LATERAL (SELECT CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 97 = 0 THEN 'available'
                                        ELSE 'completed' END AS state) s`);
    await f.sql('ANALYZE awa.jobs');
    [{ id: middleId }] = await f.sql(`SELECT (max(id) / 2)::text AS id FROM awa.jobs`);
  });

  async function explain(statement: SqlStatement, values: unknown[]): Promise<PlanNode> {
    await client.query('BEGIN');
    try {
      const { rows } = await client.query({
        text: `EXPLAIN (FORMAT JSON, ANALYZE, BUFFERS) ${statement.text}`,
        values,
      });
      return (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
    } finally {
      await client.query('ROLLBACK');
    }
  }

  /** The statement and values of the page after `after` (null: the first page) for this filter. */
  const list = (query: Record<string, unknown>, after: string | null): [SqlStatement, unknown[]] => [
    dashboardSql.listJobs,
    [...filterParams(parseFilter(query)), after ?? dashboardSql.FIRST_PAGE, 50],
  ];

  it.each([
    ['no filter', {}],
    ['a state', { state: 'failed' }],
    ['a queue and a kind', { queue: 'queue1', kind: 'kind.6' }],
    ['args containment', { args: '{"userId": 17}' }],
  ])('lists a deep page filtered by %s down the primary key, with no sort of the table', async (_name, query) => {
    const plan = await explain(...list(query, middleId));
    expect(scans(plan)).toEqual(['Index Scan on jobs using jobs_pkey']);
    expect(planNodes(plan).map((n) => n['Node Type'])).not.toContain('Sort');
  });

  it('reads a page deep in the table (page 2000) with as few blocks as the first page', async () => {
    const first = await explain(...list({ state: 'completed' }, null));
    const deep = await explain(...list({ state: 'completed' }, middleId));
    expect(scans(deep)).toEqual(['Index Scan on jobs using jobs_pkey']);
    expect(blocks(deep)).toBeLessThanOrEqual(blocks(first) * 2 + 10);
  });

  it.each([
    ['the first page', null],
    ['a deep page', 'middle'],
  ])('keeps the index scan in the generic plan of the prepared statement, for %s', async (_name, after) => {
    const [statement, values] = list({ state: 'failed' }, after && middleId);
    await client.query('BEGIN');
    try {
      await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE dashboard_list AS ${statement.text}`);
      const literals = values.map((v) =>
        v === null ? 'NULL' : typeof v === 'number' ? v : `'${Array.isArray(v) ? `{${v.join(',')}}` : String(v)}'`,
      );
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE dashboard_list(${literals.join(', ')})`);
      const plan = (rows[0]['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0]!.Plan;
      expect(scans(plan)).toEqual(['Index Scan on jobs using jobs_pkey']);
    } finally {
      await client.query('ROLLBACK');
      await client.query('DEALLOCATE ALL');
    }
  });

  it('counts per-minute throughput of the last hour through jobs_finalized_idx', async () => {
    const plan = await explain(dashboardSql.throughput, [60]);
    expect(scans(plan)).toEqual([expect.stringMatching(/^(Index|Bitmap Heap) Scan on jobs/)]);
    expect(planNodes(plan).some((n) => n['Index Name'] === 'jobs_finalized_idx')).toBe(true);
  });
});
