import type pg from 'pg';
import { flowSql, workerSql } from '../../lib/sql/index.js';
import { useSqlFixture } from '../sql/sql-fixture.js';
import { planNodes, type PlanNode, readsOf } from '../support/query-plan.js';

const KEYS = 10_000;
const FREE_KEYS = 10;
const JOBS_PER_KEY = 5;
const KEY_LIMIT = 2;

/**
 * The keyed claim with 10,000 keys, all but 10 at their limit, and 50,000 waiting jobs: the statements
 * inside awa.claim_flow (EXPLAIN ANALYZE through auto_explain's nested statements) read the free keys
 * from flow_keys_ready_idx and their jobs from jobs_flow_idx, and never walk the saturated keys or
 * their jobs.
 */
describe('the keyed claim beside 10,000 keys at their limit', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  const plans: PlanNode[] = [];

  beforeAll(async () => {
    await f.sql(`INSERT INTO awa.jobs (kind, queue, concurrency_key)
                 SELECT 'k', 'q', 'key-' || (i % ${KEYS}) FROM generate_series(1, ${KEYS * JOBS_PER_KEY}) i`);
    // All but FREE_KEYS keys run KEY_LIMIT attempts (as the claim leaves a key at its limit).
    await f.sql(`UPDATE awa.flow_keys SET running = ${KEY_LIMIT}, saturated = true, last_claimed_at = now()
                  WHERE key NOT IN (SELECT 'key-' || i FROM generate_series(0, ${FREE_KEYS - 1}) i)`);
    await f.sql('VACUUM ANALYZE awa.jobs');
    await f.sql('VACUUM ANALYZE awa.flow_keys');
    client = await f.client();
    client.on('notice', (msg) => {
      const text = String(msg.message ?? '');
      if (text.includes('plan:')) plans.push((JSON.parse(text.slice(text.indexOf('{'))) as { Plan: PlanNode }).Plan);
    });
    await client.query(`LOAD 'auto_explain'`);
    await client.query(`SET auto_explain.log_min_duration = 0`);
    await client.query(`SET auto_explain.log_analyze = on`);
    await client.query(`SET auto_explain.log_nested_statements = on`);
    await client.query(`SET auto_explain.log_format = json`);
    await client.query(`SET client_min_messages = log`);
  }, 120_000);

  /**
   * Plans of the statements inside one claim, rolled back. `noSeqScan`: for small tables, where the
   * planner rightly prefers a sequential scan; the plan then shows whether an index serves each scan.
   */
  async function claimPlans(values: unknown[], noSeqScan = false): Promise<{ rows: unknown[]; scans: PlanNode[] }> {
    plans.length = 0;
    await client.query('BEGIN');
    if (noSeqScan) await client.query('SET LOCAL enable_seqscan = off');
    const { rows } = await client.query({ text: flowSql.claimFlowJobs.text, values });
    await client.query('ROLLBACK');
    const scans = plans
      .flatMap(planNodes)
      .filter((n) => ['jobs', 'flow_keys', 'queues'].includes(n['Relation Name'] ?? ''))
      .filter((n) => n['Node Type'] !== 'ModifyTable');
    return { rows, scans };
  }

  it('the rate-limited claim without keys reads the queue row and the (queue, kind) indexes', async () => {
    await f.sql(`INSERT INTO awa.jobs (kind, queue) SELECT 'k', 'plain' FROM generate_series(1, 100)`);
    const { rows, scans } = await claimPlans(['plain', ['k'], 10, 'instance-a', 0, 100, 1_000, 0, 0], true);
    expect(rows).toHaveLength(10);
    expect(scans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    expect(scans.map((n) => n['Index Name'])).toEqual(
      expect.arrayContaining(['jobs_claim_kind_idx', 'jobs_pkey', 'queues_pkey']),
    );
  });

  it('a completion gives its keys their slots back by primary key and ctid, never a scan of every key', async () => {
    plans.length = 0;
    await client.query('BEGIN');
    const { rows } = await client.query({
      text: flowSql.claimFlowJobs.text,
      values: ['q', ['k'], 20, 'instance-a', 0, 0, 0, KEY_LIMIT, 0],
    });
    plans.length = 0;
    const claimed = rows as Array<{ id: string; run_lease: string }>;
    await client.query({
      text: workerSql.completeJobs.text,
      values: [claimed.map((r) => r.id), claimed.map((r) => r.run_lease)],
    });
    const scans = plans.flatMap((plan) => readsOf(plan, 'flow_keys'));
    const keys = (
      await client.query(`SELECT sum(running)::int AS n FROM awa.flow_keys WHERE queue = 'q' AND key = ANY ($1)`, [
        Array.from({ length: FREE_KEYS }, (_, i) => `key-${i}`),
      ])
    ).rows[0].n;
    await client.query('ROLLBACK');
    expect(claimed).toHaveLength(FREE_KEYS * KEY_LIMIT);
    expect(keys).toBe(0);
    expect(scans.map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''}`.trim()).sort()).toEqual([
      'Index Scan flow_keys_pkey',
      'Tid Scan',
    ]);
  });

  it('claims from the free keys only, by index, without reading the saturated keys or their jobs', async () => {
    const { rows, scans } = await claimPlans(['q', ['k'], 20, 'instance-a', 0, 0, 0, KEY_LIMIT, 0]);
    expect(rows).toHaveLength(FREE_KEYS * KEY_LIMIT);
    expect(scans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
    // The key rows are updated by the ctids their locking read returned: a TID scan.
    const indexes = [...new Set(scans.map((n) => `${n['Relation Name']} ${n['Index Name'] ?? n['Node Type']}`))].sort();
    // The due keyed jobs (promoted by the claim itself) are read from a partial index of due jobs: either
    // one, as the planner finds cheaper; here there are none.
    const dueProbe: string[] = indexes.filter((i) => i === 'jobs jobs_due_kind_idx' || i === 'jobs jobs_pending_idx');
    expect(dueProbe).toHaveLength(1);
    expect(indexes.filter((i) => !dueProbe.includes(i))).toEqual([
      'flow_keys Tid Scan',
      'flow_keys flow_keys_ready_idx',
      'jobs jobs_flow_idx',
      'jobs jobs_pkey',
      'queues queues_pkey',
    ]);
    // Rows each scan produced or threw away: bounded by the free keys and their slots, not by 10,000 keys.
    const read = scans.map(
      (n) => (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1) + (n['Rows Removed by Filter'] ?? 0),
    );
    expect(Math.max(...read)).toBeLessThanOrEqual(FREE_KEYS * KEY_LIMIT);
  });
});
