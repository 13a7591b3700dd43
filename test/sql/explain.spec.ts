import type pg from 'pg';
import { RescueErrors } from '../../lib/awa.messages.js';
import { rescueParams } from '../../lib/maintenance/tasks/maintenance-task.js';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import {
  claimSql,
  instancesSql,
  jobsSql,
  jobTransactionSql,
  maintenanceSql,
  type SqlParams,
  type SqlStatement,
  workerSql,
} from '../../lib/sql/index.js';
import { queueDepths } from '../../lib/telemetry/telemetry.sql.js';
import { useSqlFixture } from './sql-fixture.js';
import { planNodes, type PlanNode, explainedPlan } from '../support/query-plan.js';

const AWA_TABLES = new Set(['jobs', 'active_leases']);
const INDEX_SCANS = new Set(['Index Scan', 'Index Only Scan', 'Bitmap Heap Scan']);

/** "<node type> on <table> [using <index>]" for each scan of awa.jobs / awa.active_leases. */
function scans(plan: PlanNode): string[] {
  return planNodes(plan)
    .filter((n) => n['Node Type'] !== 'ModifyTable' && n.Schema === 'awa' && AWA_TABLES.has(n['Relation Name'] ?? ''))
    .map((n) => `${n['Node Type']} on ${n['Relation Name']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`);
}

function indexesUsed(plan: PlanNode): string[] {
  return [
    ...new Set(
      planNodes(plan)
        .map((n) => n['Index Name'])
        .filter((i): i is string => typeof i === 'string'),
    ),
  ].sort();
}

function literal(value: unknown): string {
  if (value === null) return 'NULL';
  if (Array.isArray(value))
    return literal(`{${value.map((v) => `"${String(v).replace(/["\\]/g, '\\$&')}"`).join(',')}}`);
  return `'${String(value).replace(/'/g, "''")}'`;
}

/** $1..$6 of the rescues as the leader of a default app passes them. */
const RESCUE = rescueParams(resolveAwaOptions({}));

/**
 * The claim, promotion, cleanup and every per-attempt write are served by indexes. The tables here
 * are small, so the planner would rightly prefer a sequential scan: seq scans are switched off for
 * the EXPLAIN, which then shows whether an index exists that serves each query.
 */
describe('query plans', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  beforeAll(async () => {
    client = await f.client();
    // Some rows of every kind, and statistics, so the plans are those of a used database.
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, run_at, finalized_at)
                 SELECT 'k' || (i % 5), 'q' || (i % 3), s.state, 1, 1, now() + ((i % 7) - 3) * interval '1 minute',
                        CASE WHEN s.state IN ('completed', 'failed', 'cancelled') THEN now() - (i % 48) * interval
                          '1 hour' END
                   FROM generate_series(1, 2000) i
                   CROSS JOIN LATERAL (SELECT
                     (ARRAY['scheduled','available','running','retryable','completed','failed','cancelled'])[1 + i %
                       7] AS state) s`);
    await f.sql(`INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, claimed_at, deadline_at)
                 SELECT id, run_lease, 'instance-' || (id % 4), now() - (id % 120) * interval '1 second',
                        now() - (id % 120) * interval '1 second' - (id % 900) * interval '1 second',
                        CASE WHEN id % 2 = 0 THEN now() + (id % 600 - 300) * interval '1 second' END
                   FROM awa.jobs WHERE state = 'running'`);
    await f.sql('ANALYZE awa.jobs');
    await f.sql('ANALYZE awa.active_leases');
  });

  /**
   * The plan of `statement` with `values` bound to its parameters. 'custom': planned for these values,
   * as a prepared statement's first executions are; 'generic': the parameter-independent plan
   * PostgreSQL may switch a prepared statement to after a few executions.
   */
  async function explain<P extends unknown[]>(
    statement: SqlStatement<P, unknown>,
    values: NoInfer<P>,
    mode: 'custom' | 'generic' = 'custom',
    before?: string,
  ): Promise<PlanNode> {
    await client.query('BEGIN');
    try {
      await client.query('SET LOCAL enable_seqscan = off');
      if (before) await client.query(before);
      let text = `EXPLAIN (FORMAT JSON, VERBOSE) ${statement.text}`;
      if (mode === 'generic') {
        await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
        await client.query(`PREPARE awa_explained AS ${statement.text}`);
        // EXECUTE takes no bound parameters: untyped literals, which take the parameters' types.
        const args = values.length > 0 ? `(${values.map(literal).join(', ')})` : ''; // no () without parameters
        text = `EXPLAIN (FORMAT JSON, VERBOSE) EXECUTE awa_explained${args}`;
      }
      const { rows } = await client.query({ text, values: mode === 'generic' ? [] : (values as unknown[]) });
      return explainedPlan(rows);
    } finally {
      await client.query('ROLLBACK');
      // Prepared statements outlive the transaction.
      if (mode === 'generic') await client.query('DEALLOCATE ALL');
    }
  }

  /** A statement with values its parameters type-check against, and the indexes its plan must use. */
  const planCase = <P extends unknown[]>(
    name: string,
    statement: SqlStatement<P, unknown>,
    values: NoInfer<P>,
    expected: string[],
  ) => [name, statement as SqlStatement, values as unknown[], expected] as const;

  const cases = [
    planCase(
      'claimJobs',
      claimSql.claimJobs,
      ['q1', ['k1', 'k2'], 10, 'instance-0', 300_000, ...claimSql.fromIndexStart(['k1', 'k2'])],
      ['jobs_claim_kind_idx', 'jobs_due_kind_idx'],
    ),
    planCase('promoteDueJobs', maintenanceSql.promoteDueJobs, [500], ['jobs_pending_idx']),
    planCase(
      'deleteFinishedJobs',
      maintenanceSql.deleteFinishedJobs,
      [86_400_000, 604_800_000, 5_000],
      ['jobs_finalized_idx'],
    ),
    planCase('findUnhandledKinds', maintenanceSql.findUnhandledKinds, [90_000, 50], ['jobs_claim_kind_idx']),
    planCase(
      'resolveUniqueJobs',
      jobsSql.resolveUniqueJobs,
      [JSON.stringify([{ ord: 0, unique_key: 'k:1', replace: true, args: {}, run_at: null }])],
      ['jobs_unique_idx'],
    ),
    planCase('queueDepths', queueDepths, [], ['active_leases_pkey', 'jobs_pending_idx', 'jobs_pkey']),
    // The per-attempt writes go by primary key.
    planCase(
      'completeJobs',
      workerSql.completeJobs,
      [
        ['1', '2'],
        ['1', '1'],
      ],
      ['active_leases_pkey', 'jobs_pkey'],
    ),
    planCase(
      'failJobs',
      workerSql.failJobs,
      [['1'], ['1'], ['boom'], [1_000], [2_000]],
      ['active_leases_pkey', 'jobs_pkey'],
    ),
    planCase(
      'releaseJobs',
      workerSql.releaseJobs,
      [['1'], ['1'], 'released', [true], [1_000], [2_000]],
      ['active_leases_pkey', 'jobs_pkey'],
    ),
    planCase(
      'heartbeatLeases',
      workerSql.heartbeatLeases,
      [
        ['1', '2'],
        ['1', '1'],
      ],
      ['active_leases_pkey'],
    ),
    planCase(
      'startLeases',
      workerSql.startLeases,
      [
        ['1', '2'],
        ['1', '1'],
        [1_000, 1_000],
      ],
      ['active_leases_pkey'],
    ),
    planCase(
      'completeJobsWithOutput',
      workerSql.completeJobsWithOutput,
      [['1'], ['1'], ['{"n": 1}'], [null]],
      ['active_leases_pkey', 'jobs_pkey'],
    ),
    planCase(
      'snoozeJobs',
      workerSql.snoozeJobs,
      [['1'], ['1'], [1_000], [100], ['cap']],
      ['active_leases_pkey', 'jobs_pkey'],
    ),
    planCase('holdAttempt', jobTransactionSql.holdAttempt, ['1', '1', '60000'], ['active_leases_pkey', 'jobs_pkey']),
    planCase(
      'completeAttempt',
      jobTransactionSql.completeAttempt,
      ['1', '1', '{"n": 1}', null],
      ['active_leases_pkey', 'jobs_pkey'],
    ),
    planCase(
      'writeProgress',
      workerSql.writeProgress,
      [['1'], ['1'], ['{"n": 1}']],
      ['active_leases_pkey', 'jobs_pkey'],
    ),
  ];

  const modes = ['custom', 'generic'] as const;
  it.each(cases.flatMap(([name, ...rest]) => modes.map((mode) => [name, mode, ...rest] as const)))(
    '%s (%s plan) scans awa tables by index only, using the expected ones',
    async (_name, mode, statement, values, expected) => {
      const plan = await explain(statement, values, mode);
      const found = scans(plan);
      expect(found.length).toBeGreaterThan(0);
      // Lists any Seq Scan (or other non-index scan) of an awa table, so a failure names it.
      expect(found.filter((scan) => !INDEX_SCANS.has(scan.split(' on ')[0]!))).toEqual([]);
      expect(indexesUsed(plan)).toEqual(expect.arrayContaining(expected));
    },
  );

  it.each(modes)(
    'the claim (%s plan) takes available jobs from jobs_claim_kind_idx and due ones from jobs_due_kind_idx',
    async (mode) => {
      const plan = await explain(
        claimSql.claimJobs,
        ['q1', ['k1'], 10, 'instance-0', 0, ...claimSql.fromIndexStart(['k1'])],
        mode,
      );
      const ctes = planNodes(plan).filter(
        (n) => typeof n['Subplan Name'] === 'string' && String(n['Subplan Name']).startsWith('CTE '),
      );
      const indexOf = (cte: string) => indexesUsed(ctes.find((n) => n['Subplan Name'] === `CTE ${cte}`)!);
      expect(indexOf('available')).toEqual(['jobs_claim_kind_idx']);
      expect(indexOf('due')).toEqual(['jobs_due_kind_idx']);
    },
  );

  it("would see a missing index: without the leases' primary key the completion reads them with a Seq Scan", async () => {
    // DDL is transactional: the key is back after the ROLLBACK.
    const attempts: [string[], string[]] = [['1'], ['1']];
    const drop = 'ALTER TABLE awa.active_leases DROP CONSTRAINT active_leases_pkey';
    expect(scans(await explain(workerSql.completeJobs, attempts, 'custom', drop))).toContain(
      'Seq Scan on active_leases',
    );
    expect(indexesUsed(await explain(workerSql.completeJobs, attempts))).toContain('active_leases_pkey');
  });

  /**
   * The leader's scans of the leases: awa.active_leases holds only the attempts in flight, and keeps no
   * index but its primary key (a claimed job writes no more entries there), so they read it whole,
   * with a sequential scan or a walk of that key; awa.jobs, which can be large, only by index.
   */
  const leaseScans = [
    ['rescueStaleHeartbeats', maintenanceSql.rescueStaleHeartbeats, [...RESCUE, 90_000, 'stale']],
    ['rescueExpiredDeadlines', maintenanceSql.rescueExpiredDeadlines, [...RESCUE, 'deadline']],
    [
      'rescueOrphanedLeases',
      maintenanceSql.rescueOrphanedLeases,
      [...RESCUE, ['instance-1', 'instance-2'], RescueErrors.instanceDiedPrefix],
    ],
    ['forgetDeadInstances', instancesSql.forgetDeadInstances, [['instance-1']]],
  ] as const;
  const WHOLE_LEASE_SCANS = new Set([
    'Seq Scan on active_leases',
    'Index Scan on active_leases using active_leases_pkey',
    'Index Only Scan on active_leases using active_leases_pkey',
  ]);
  it.each(leaseScans.flatMap(([name, ...rest]) => modes.map((mode) => [name, mode, ...rest] as const)))(
    '%s (%s plan) reads awa.active_leases whole and awa.jobs by index only',
    async (_name, mode, statement, values) => {
      const found = scans(await explain(statement as SqlStatement, values as unknown as unknown[], mode));
      const leases = found.filter((scan) => scan.split(' using ')[0]!.endsWith(' on active_leases'));
      expect(leases.length).toBeGreaterThan(0);
      expect(leases.filter((scan) => !WHOLE_LEASE_SCANS.has(scan))).toEqual([]);
      const jobs = found.filter((scan) => !leases.includes(scan));
      expect(jobs.filter((scan) => !INDEX_SCANS.has(scan.split(' on ')[0]!))).toEqual([]);
    },
  );
});

/**
 * The claim's cost does not depend on what other kinds and other queues hold: with 200,000
 * available jobs of a kind no instance handles in the claimed queue, and 200,000 due scheduled jobs
 * in another queue, the claim reads only rows of the kinds it asks for. Real statistics and the
 * planner's own choices here (no enable_seqscan = off); EXPLAIN ANALYZE counts the rows each
 * node read and threw away.
 */
describe('the claim beside a backlog it cannot take', () => {
  const f = useSqlFixture({ reset: false });
  const BACKLOG = 200_000;
  const CLAIM = ['q1', ['k1', 'k2'], 10, 'instance-0', 0, ...claimSql.fromIndexStart(['k1', 'k2'])];
  let client: pg.Client;
  beforeAll(async () => {
    client = await f.client();
    // Backlog first, so that it comes first in claim order (earlier run_at, lower ids).
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, run_at)
                 SELECT 'nobody.handles.this', 'q1', 'available', now() - interval '1 hour' FROM generate_series(1,
                   ${BACKLOG})`);
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, run_at)
                 SELECT 'k1', 'q2', 'scheduled', now() - interval '1 hour' FROM generate_series(1, ${BACKLOG})`);
    await f.sql(
      `INSERT INTO awa.jobs (kind, queue, state, run_at) SELECT 'k1', 'q1', ` +
        `'available', now() FROM generate_series(1, 20)`,
    );
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, run_at)
                 SELECT 'k2', 'q1', 'retryable', 1, 1, now() - interval '1 minute' FROM generate_series(1, 5)`);
    await f.sql('VACUUM ANALYZE awa.jobs');
  }, 120_000);

  /** EXPLAIN ANALYZE of the claim, rolled back: 'generic' runs the prepared statement's generic plan. */
  async function analyze(mode: 'custom' | 'generic'): Promise<{ plan: PlanNode; claimed: number }> {
    await client.query('BEGIN');
    try {
      let text = `EXPLAIN (ANALYZE, FORMAT JSON, VERBOSE) ${claimSql.claimJobs.text}`;
      if (mode === 'generic') {
        await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
        await client.query(`PREPARE awa_backlog_claim AS ${claimSql.claimJobs.text}`);
        text = `EXPLAIN (ANALYZE, FORMAT JSON, VERBOSE) EXECUTE awa_backlog_claim(${CLAIM.map(literal).join(', ')})`;
      }
      const { rows } = await client.query({ text, values: mode === 'generic' ? [] : CLAIM });
      const plan = explainedPlan(rows);
      return { plan, claimed: Number(plan['Actual Rows']) };
    } finally {
      await client.query('ROLLBACK');
      if (mode === 'generic') await client.query('DEALLOCATE ALL');
    }
  }

  it.each(['custom', 'generic'] as const)(
    'the claim (%s plan) reads only the rows of the kinds it handles, from the (queue, kind) indexes',
    async (mode) => {
      const { plan, claimed } = await analyze(mode);
      expect(claimed).toBe(10);
      // Every node that threw rows away, with how many: none may have touched the backlog.
      const discarding = planNodes(plan)
        .map((n) => ({
          node: `${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`,
          removed: Number(n['Rows Removed by Filter'] ?? 0) + Number(n['Rows Removed by Index Recheck'] ?? 0),
        }))
        .filter((n) => n.removed > 100);
      expect(discarding).toEqual([]);
      expect(scans(plan).filter((scan) => !INDEX_SCANS.has(scan.split(' on ')[0]!))).toEqual([]);
      expect(indexesUsed(plan)).toEqual(expect.arrayContaining(['jobs_claim_kind_idx', 'jobs_due_kind_idx']));
    },
  );
});

/**
 * PostgreSQL plans a prepared statement's first 5 executions for their values, then keeps the
 * generic plan if it costs no more than those did. A custom plan that knew how many kinds it claims
 * would look cheaper, and the claim would be planned again on every call.
 */
describe('the prepared claim on a fresh database', () => {
  const f = useSqlFixture({ reset: false });

  it('settles on its generic plan (planned once, not on every call)', async () => {
    const client = await f.client();
    const values: SqlParams<typeof claimSql.claimJobs> = [
      'default',
      ['k1', 'k2', 'k3'],
      24,
      'instance-0',
      300_000,
      ...claimSql.fromIndexStart(['k1', 'k2', 'k3']),
    ];
    for (let i = 0; i < 10; i++) {
      await client.query('BEGIN');
      await f.run(claimSql.claimJobs, values, client);
      await client.query('ROLLBACK');
    }
    const { rows } = await client.query(
      `SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = $1`,
      [claimSql.claimJobs.name],
    );
    expect(rows).toEqual([{ generic: 5, custom: 5 }]);
  });
});
