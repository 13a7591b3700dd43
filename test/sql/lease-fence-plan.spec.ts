import type pg from 'pg';
import { workerSql, type SqlStatement } from '../../lib/sql/index.js';
import { examinedRows } from '../support/completion-plan.js';
import { explainedPlan, planNodes, type PlanNode } from '../support/query-plan.js';
import { useSqlFixture, type SqlFixture } from './sql-fixture.js';

/** Attempts claimed and finished before the statistics are taken: the tables' pages. */
const CHURNED = 100_000;
/** Leases held when the batch is written: what a plan that reads the whole table reads. */
const HELD = 2_000;
/** The attempts of one batched write. */
const BATCH = 200;

type Case = readonly [name: string, statement: SqlStatement, values: (batch: string[]) => unknown[]];
const leases = (batch: string[]) => batch.map(() => '7');
const each = <T>(batch: string[], value: T) => batch.map(() => value);

const KEYED: Case[] = [
  ['completeJobs', workerSql.completeJobs, (b) => [b, leases(b)]],
  ['cancelRunningJobs', workerSql.cancelRunningJobs, (b) => [b, leases(b), 'cancelled']],
  ['failJobs', workerSql.failJobs, (b) => [b, leases(b), each(b, 'boom'), each(b, 1_000), each(b, 2_000)]],
  [
    'completeJobsWithOutput',
    workerSql.completeJobsWithOutput,
    (b) => [b, leases(b), each(b, '{"n": 1}'), each(b, null)],
  ],
  [
    'releaseJobs',
    workerSql.releaseJobs,
    (b) => [b, leases(b), 'released', each(b, true), each(b, 1_000), each(b, 2_000)],
  ],
  ['snoozeJobs', workerSql.snoozeJobs, (b) => [b, leases(b), each(b, 1_000), each(b, 100), each(b, 'cap')]],
  ['writeProgress', workerSql.writeProgress, (b) => [b, leases(b), each(b, '{"p": 1}')]],
];
const EVERY_FENCE: Case[] = [...KEYED, ['startLeases', workerSql.startLeases, (b) => [b, leases(b), each(b, 60_000)]]];

/**
 * Statistics of a nearly empty moment: a spell of churn, then one row left in each of `tables` (the
 * last, so the pages stay) when they are taken, then HELD running attempts in the pages the churn
 * left. Returns their ids.
 */
async function afterALull(f: SqlFixture, tables: ReadonlyArray<'active_leases' | 'jobs'>): Promise<string[]> {
  const insertRunning = (n: number) =>
    f.sql(
      `WITH jobs AS (
         INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, attempted_at)
         SELECT 'k', 'q', 'running', 1, 7, now() FROM generate_series(1, $1) RETURNING id
       )
       INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, claimed_at, deadline_at)
       SELECT id, 7, 'i', now(), now(), now() + interval '5 minutes' FROM jobs RETURNING job_id::text AS id`,
      [n],
    );
  await insertRunning(CHURNED);
  await f.sql(`DELETE FROM awa.active_leases WHERE job_id < (SELECT max(job_id) FROM awa.active_leases)`);
  if (tables.includes('jobs')) await f.sql(`DELETE FROM awa.jobs WHERE id < (SELECT max(id) FROM awa.jobs)`);
  await f.sql(`VACUUM ANALYZE ${tables.map((t) => `awa.${t}`).join(', ')}`);
  const planned = await f.sql(`SELECT reltuples::int AS tuples FROM pg_class WHERE oid = ANY ($1::regclass[])`, [
    tables.map((t) => `awa.${t}`),
  ]);
  expect(planned.map((r) => r.tuples)).toEqual(tables.map(() => 1));
  return (await insertRunning(HELD)).map((r) => r.id as string);
}

/** EXPLAIN ANALYZE of `statement`, rolled back: planned for its values, or the prepared statement's generic plan. */
async function analyze(
  client: pg.Client,
  statement: SqlStatement,
  values: unknown[],
  mode: 'custom' | 'generic',
): Promise<PlanNode> {
  await client.query('BEGIN');
  try {
    if (mode === 'custom') {
      const { rows } = await client.query({ text: `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`, values });
      return explainedPlan(rows);
    }
    await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await client.query(`PREPARE awa_fenced AS ${statement.text}`);
    // EXPLAIN EXECUTE takes no bound parameters: literals, which take the parameters' types.
    const literals = values.map((v) => client.escapeLiteral(Array.isArray(v) ? arrayText(v) : String(v)));
    const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE awa_fenced(${literals.join(', ')})`);
    return explainedPlan(rows);
  } finally {
    await client.query('ROLLBACK');
    if (mode === 'generic') await client.query('DEALLOCATE ALL');
  }
}

/** Rows read from a statement's arrays and CTEs, each scan's loops × rows: a join done row by row shows here. */
function batchRowsRead(plan: PlanNode): number {
  return planNodes(plan)
    .filter((n) => n['Node Type'] === 'Function Scan' || n['Node Type'] === 'CTE Scan')
    .reduce((sum, n) => sum + Number(n['Actual Loops'] ?? 0) * Number(n['Actual Rows'] ?? 0), 0);
}

/** An array parameter as PostgreSQL's text form (NULL elements unquoted). */
function arrayText(values: unknown[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : `"${String(v).replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
}

/**
 * A fixture of the enclosing describe block after a lull in `tables` (afterALull), and EXPLAIN ANALYZE
 * of a statement on BATCH of its held attempts.
 */
function useLull(
  tables: ReadonlyArray<'active_leases' | 'jobs'>,
): (statement: SqlStatement, values: Case[2], mode: 'custom' | 'generic') => Promise<PlanNode> {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  let batch: string[];
  beforeAll(async () => {
    client = await f.client();
    batch = (await afterALull(f, tables)).slice(HELD / 2, HELD / 2 + BATCH);
  });
  return (statement, values, mode) => analyze(client, statement, values(batch), mode);
}

const withModes = (cases: Case[]) =>
  cases.flatMap(([name, statement, values]) =>
    (['custom', 'generic'] as const).map((mode) => [name, mode, statement, values] as const),
  );

/**
 * Every batched per-attempt write reads the leases it is given and no others, whatever the statistics
 * say. awa.active_leases holds only the attempts in flight but churns at the job rate, so an autovacuum
 * may find it nearly empty over many pages (a moment between claims); its statistics then take the
 * table for one row, and a plan that read it first walked every lease for each pair. At 15,000 jobs/s
 * the completions took 50 to 130 ms each from then on and the backlog grew for minutes; the
 * maintenance leader's re-ANALYZE never fires on a table that small
 * (docs/capacity.md#a-lease-table-taken-for-one-row-5-december-2026). EXPLAIN ANALYZE, rolled back.
 */
describe('the lease fence, planned from statistics of a nearly empty lease table', () => {
  const explain = useLull(['active_leases']);

  it.each(withModes(EVERY_FENCE))(
    '%s (%s plan) reads the leases of its batch, not the table, and its batch a few times over',
    async (_name, mode, statement, values) => {
      const plan = await explain(statement, values, mode);
      const leasesRead = examinedRows(plan, ['active_leases']);
      expect(leasesRead).toBeGreaterThanOrEqual(BATCH);
      expect(leasesRead).toBeLessThanOrEqual(2 * BATCH);
      expect(batchRowsRead(plan)).toBeLessThanOrEqual(20 * BATCH);
    },
  );
});

/**
 * Every lease write that changes jobs changes them by key too (changeJobs' `pairs`, each job's values
 * read by key from one jsonb object of the batch): with both tables taken for one row, they read the
 * batch's jobs and leases once. Joined to awa.jobs, the release and the snooze read 3 × the batch,
 * and the progress write every job (2,001; 479 ms for 500 attempts), until the leader's re-ANALYZE
 * (docs/storage.md#the-hot-tables).
 */
describe('the keyed writes, planned from statistics of a nearly empty jobs and lease table', () => {
  const explain = useLull(['active_leases', 'jobs']);

  it.each(withModes(KEYED))(
    '%s (%s plan) reads the jobs and leases of its batch once',
    async (name, mode, statement, values) => {
      const plan = await explain(statement, values, mode);
      // Each returns the attempts it changed, but completeJobs those it missed (none here).
      expect(Number(plan['Actual Rows'])).toBe(name === 'completeJobs' ? 0 : BATCH);
      expect(examinedRows(plan, ['active_leases'])).toBeLessThanOrEqual(2 * BATCH);
      expect(examinedRows(plan, ['jobs'])).toBeLessThanOrEqual(2 * BATCH);
      expect(batchRowsRead(plan)).toBeLessThanOrEqual(20 * BATCH);
    },
  );
});
