import type pg from 'pg';
import { FINISHED_EXACT_CAP, RARE_EXACT_CAP } from '../../lib/admin/queue-counts.js';
import * as dashboardSql from '../../lib/dashboard/dashboard.sql.js';
import { COUNT_CAP, SCAN_WINDOW } from '../../lib/dashboard/dashboard.service.js';
import { queueCountsSql } from '../../lib/sql/index.js';
import type { AwaDatabase } from '../../lib/database/awa-database.js';
import { ThroughputReader } from '../../lib/dashboard/dashboard-throughput.js';
import { filterParams, parseFilter } from '../../lib/dashboard/dashboard.input.js';
import type { SqlStatement } from '../../lib/sql/index.js';
import { useSqlFixture } from '../sql/sql-fixture.js';
import { planNodes, type PlanNode, explainedPlan } from '../support/query-plan.js';
import { JOB_TABLE_COLUMNS } from '../../lib/sql/job-row.sql.js';

const ROWS = 200_000;
/** "<node> on <table> [using <index>]" for every scan of a table. */
const scans = (plan: PlanNode) =>
  planNodes(plan)
    .filter((n) => n['Relation Name'])
    .map((n) => `${n['Node Type']} on ${n['Relation Name']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`);
/**
 * The scans of a listing that are neither an id index walk (the primary key of awa.jobs, the id index
 * of a history partition) nor a sequential scan of one history partition (which the planner may take
 * when the id window covers much of it: bounded by the partition, 1/8 of its class's retention), and
 * a note if awa.jobs' primary key is not walked: [] when all is well. awa.jobs is never read whole.
 */
const notIdScans = (plan: PlanNode) => {
  const all = scans(plan);
  const others = all.filter(
    (s) =>
      !/^Index Scan on (jobs using jobs_pkey|job_history_(\d+) using job_history_\2_id_idx)$/.test(s) &&
      !/^Seq Scan on job_history_\d+$/.test(s),
  );
  return all.includes('Index Scan on jobs using jobs_pkey') ? others : [...others, 'no scan of jobs_pkey'];
};
/** Scans of awa.jobs or of a partition of awa.job_history. */
const isJobTable = (name: unknown) => name === 'jobs' || (typeof name === 'string' && name.startsWith('job_history_'));
const blocks = (plan: PlanNode) => (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);

/**
 * The dashboard's scans on a realistic table (200k jobs over every state, queue and tag mix, with
 * statistics), planned by PostgreSQL as it would in production: sequential scans are NOT switched off.
 */
describe('dashboard query plans on 200k jobs', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  let middleId: string;
  let top: string;

  beforeAll(async () => {
    client = await f.client();
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, args, tags, created_at, finalized_at)
      SELECT 'kind.' || (i % 20), 'queue' || (i % 5), s.state, 1, jsonb_build_object('userId', i % 5000, 'n', i),
             CASE WHEN i % 10 = 0 THEN ARRAY['vip'] ELSE '{}' END, now() - (${ROWS} - i) * interval '1 second',
             CASE WHEN s.state IN ('completed', 'failed', 'cancelled') THEN now() - (${ROWS} - i) * interval '1 second' END
        FROM generate_series(1, ${ROWS}) i
        CROSS JOIN LATERAL (SELECT CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 4 = 0 THEN 'available'
                                        ELSE 'completed' END AS state) s`);
    // The finished ones where the queue keeps them: in awa.job_history, by finalized_at over each ring.
    await f.sql(`WITH moved AS (DELETE FROM awa.jobs WHERE state IN ('completed', 'failed', 'cancelled') RETURNING *)
      INSERT INTO awa.job_history (${JOB_TABLE_COLUMNS.join(', ')}, segment)
      SELECT m.*, (CASE WHEN m.state = 'completed' THEN 0 ELSE 8 END + least(7, m.id * 8 / ${ROWS}))::smallint
        FROM moved m`);
    await f.sql('ANALYZE awa.jobs');
    await f.sql('ANALYZE awa.job_history');
    [{ id: middleId, top }] = await f.sql(
      `SELECT (max(id) / 2)::text AS id, (max(id) + 1)::text AS top FROM awa.all_jobs`,
    );
  });

  async function explain(statement: SqlStatement, values: unknown[]): Promise<PlanNode> {
    await client.query('BEGIN');
    try {
      const { rows } = await client.query({
        text: `EXPLAIN (FORMAT JSON, ANALYZE, BUFFERS) ${statement.text}`,
        values,
      });
      return explainedPlan(rows);
    } finally {
      await client.query('ROLLBACK');
    }
  }

  /** The lowest id a page below `before` may examine (as DashboardService computes it). */
  const floorOf = (before: string, window = SCAN_WINDOW) => String(Math.max(1, Number(before) - window));
  /** The statement and values of the page after `after` (null: the first page) for this filter. */
  const list = (query: Record<string, unknown>, after: string | null): [SqlStatement, unknown[]] => [
    dashboardSql.listJobs,
    [...filterParams(parseFilter(query)), after ?? top, 50, floorOf(after ?? top)],
  ];
  /** Rows a plan's scans of awa.jobs and awa.job_history looked at: those returned and those its filters removed. */
  const examined = (plan: PlanNode) =>
    planNodes(plan)
      .filter((n) => isJobTable(n['Relation Name']))
      .reduce(
        (sum, n) =>
          sum + ((n['Actual Rows'] ?? 0) + ((n['Rows Removed by Filter'] as number) ?? 0)) * (n['Actual Loops'] ?? 1),
        0,
      );

  it.each([
    ['no filter', {}],
    ['a state', { state: 'failed' }],
    ['a queue and a kind', { queue: 'queue1', kind: 'kind.6' }],
    ['args containment', { args: '{"userId": 17}' }],
  ])('lists a deep page filtered by %s down the id indexes, within its id window', async (_name, query) => {
    const plan = await explain(...list(query, middleId));
    expect(notIdScans(plan)).toEqual([]);
    // Bounded by the id window (and one history partition, see notIdScans): a Sort, if the planner
    // takes one for a selective filter, sorts the matches of that window, never the table.
    expect(examined(plan)).toBeLessThanOrEqual(SCAN_WINDOW + ROWS / 8);
  });

  it('reads a page deep in the table (page 2000) with as few blocks as the first page', async () => {
    const first = await explain(...list({ state: 'completed' }, null));
    const deep = await explain(...list({ state: 'completed' }, middleId));
    expect(notIdScans(deep)).toEqual([]);
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
      const plan = explainedPlan(rows);
      expect(notIdScans(plan)).toEqual([]);
    } finally {
      await client.query('ROLLBACK');
      await client.query('DEALLOCATE ALL');
    }
  });

  it('counts per-minute throughput of the last hour through the finalized_at indexes', async () => {
    const plan = await explain(dashboardSql.throughput, [60, null]);
    expect(scans(plan).filter((s) => !/^(Index|Index Only|Bitmap Heap) Scan on /.test(s))).toEqual([]);
    expect(planNodes(plan).some((n) => /^job_history_\d+_finalized_at_idx$/.test(String(n['Index Name'])))).toBe(true);
  });

  it('a search that matches nothing examines one window of ids, not the table', async () => {
    const plan = await explain(...list({ search: 'no such text anywhere' }, null));
    expect(notIdScans(plan)).toEqual([]);
    expect(examined(plan)).toBeLessThanOrEqual(SCAN_WINDOW);
  });

  it('the count before a bulk action examines only the ids above its floor', async () => {
    const floor = floorOf(top, 50_000);
    const plan = await explain(dashboardSql.countJobs, [
      ...filterParams(parseFilter({ search: 'no such text anywhere' })),
      COUNT_CAP + 1,
      floor,
    ]);
    // At most one history partition beyond the ids above the floor (see notIdScans).
    expect(examined(plan)).toBeLessThanOrEqual(50_000 + ROWS / 8);
  });

  it('counts the unfinished states of every queue, reading no finished job', async () => {
    const plan = await explain(queueCountsSql.queueWaitingCounts, [['queue0']]);
    // awa.jobs holds the unfinished jobs only (here a backlog of 25% of the rows): it may be read whole.
    expect(scans(plan).filter((s) => s.includes('job_history'))).toEqual([]);
  });

  it('samples finished jobs up to the cap, whatever their number, and estimates the rest', async () => {
    const plan = await explain(queueCountsSql.finishedSample, [FINISHED_EXACT_CAP, RARE_EXACT_CAP]);
    expect(examined(plan)).toBeLessThanOrEqual(FINISHED_EXACT_CAP + 2 * RARE_EXACT_CAP);
    const [estimate] = await f.run(queueCountsSql.estimateJobs, [['queue1'], ['completed']]);
    const [{ n }] = await f.sql(
      `SELECT count(*)::int AS n FROM awa.all_jobs WHERE queue = 'queue1' AND state = 'completed'`,
    );
    expect(estimate!.estimate).toBeGreaterThan(n * 0.8);
    expect(estimate!.estimate).toBeLessThan(n * 1.2);
  });

  it('a refresh of the throughput chart reads only the minutes not settled yet, and shows what a full read does', async () => {
    const since = new Date(Date.now() - 3 * 60_000);
    const plan = await explain(dashboardSql.throughput, [60, since]);
    expect(examined(plan)).toBeLessThanOrEqual(4 * 60);
    const db = {
      query: (statement: SqlStatement, values: unknown[]) => f.run(statement, values),
    } as unknown as AwaDatabase;
    const reader = new ThroughputReader(db);
    const sum = (rows: dashboardSql.ThroughputRow[]) => rows.reduce((n, r) => n + r.completed + r.failed, 0);
    const first = await reader.read();
    const second = await reader.read();
    expect(sum(second)).toBe(sum(first));
    expect(new Set(second.map((r) => r.minute.getTime())).size).toBe(60);
  });
});
