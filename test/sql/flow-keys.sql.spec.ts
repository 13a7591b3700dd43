import type pg from 'pg';
import { flowKeysSql, flowSql, workerSql } from '../../lib/sql/index.js';
import type { FlowClaimRow } from '../../lib/sql/flow.sql.js';
import { resetFlow, seedKeyed, seedKeyRow as seedRow } from '../flow/flow-fixture.js';
import { waitFor } from '../support/test-app.js';
import { listen, statementsOf, useSqlFixture } from './sql-fixture.js';
import { planNodes, type PlanNode, explainedPlan } from '../support/query-plan.js';

const HOUR = 3_600_000;

/** The statements of awa.flow_keys housekeeping: idle-key deletion, per-key limits, the key listing. */
describe('flow-keys.sql', () => {
  const f = useSqlFixture();
  beforeEach(() => resetFlow(f.sql));

  /** A keyed claim of queue q (kind k) with `keyLimit` per key; returns the claimed jobs. */
  const claim = async (want: number, keyLimit: number, on?: pg.ClientBase) =>
    (await f.run(flowSql.claimFlowJobs, ['q', ['k'], want, 'instance-a', 0, 0, 0, keyLimit, 0], on)).filter(
      (r): r is Extract<FlowClaimRow, { id: string }> => r.id !== null,
    );
  const complete = (rows: Array<{ id: string; run_lease: string }>) =>
    f.run(workerSql.completeJobs, [rows.map((r) => r.id), rows.map((r) => r.run_lease)]);
  const keyRow = async (key: string) =>
    (
      await f.sql(
        `SELECT running, max_running, has_waiting, saturated FROM awa.flow_keys WHERE queue = 'q' AND key = $1`,
        [key],
      )
    )[0];
  const keysOf = async (rows: Array<{ id: string }>) =>
    (
      await f.sql(`SELECT concurrency_key AS key FROM awa.all_jobs WHERE id = ANY($1::bigint[]) ORDER BY 1`, [
        rows.map((r) => r.id),
      ])
    ).map((r) => r.key as string);
  const allKeys = async () => (await f.sql(`SELECT key FROM awa.flow_keys ORDER BY key`)).map((r) => r.key as string);
  const seedKeyRow = (key: string, columns?: Record<string, string>) => seedRow(f.sql, key, columns);
  const deleteIdle = (limit = 100) => f.execute(flowKeysSql.deleteIdleFlowKeys, [HOUR, limit]);

  describe('deleteIdleFlowKeys', () => {
    it('deletes exactly the idle keys: none running, waiting, held, configured or served lately', async () => {
      await seedKeyRow('idle');
      await seedKeyRow('never served', { last_claimed_at: `'-infinity'` });
      await seedKeyRow('hold ended', { held_until: `now() - interval '1 minute'` });
      await seedKeyRow('running', { running: '1' });
      await seedKeyRow('waiting', { has_waiting: 'true' });
      await seedKeyRow('held', { held_until: `now() + interval '1 minute'` });
      await seedKeyRow('configured', { max_running: '3' });
      await seedKeyRow('configured 0', { max_running: '0', saturated: 'true' });
      await seedKeyRow('recent', { last_claimed_at: `now() - interval '5 minutes'` });
      expect(await deleteIdle()).toBe(3);
      expect(await allKeys()).toEqual(['configured', 'configured 0', 'held', 'recent', 'running', 'waiting']);
      expect(await deleteIdle()).toBe(0);
    });

    it('deletes at most `limit` rows per run', async () => {
      await f.sql(`INSERT INTO awa.flow_keys (queue, key, has_waiting, last_claimed_at)
                   SELECT 'q', 'key-' || i, false, now() - interval '2 hours' FROM generate_series(1, 12) i`);
      expect(await deleteIdle(10)).toBe(10);
      expect(await deleteIdle(10)).toBe(2);
      expect(await deleteIdle(10)).toBe(0);
    });

    it('keeps a key just served: its last job ran, nothing waits, but its grace period has not passed', async () => {
      await seedKeyed(f.sql, 'a', 1);
      await complete(await claim(5, 2));
      expect(await claim(5, 2)).toEqual([]);
      expect(await keyRow('a')).toMatchObject({ running: 0, has_waiting: false });
      expect(await deleteIdle()).toBe(0);
      expect(await allKeys()).toEqual(['a']);
    });

    it('skips a key row another transaction holds (a claim, a trigger), and takes it once released', async () => {
      await seedKeyRow('idle');
      const other = await f.client();
      await other.query('BEGIN');
      await other.query(`SELECT 1 FROM awa.flow_keys WHERE key = 'idle' FOR UPDATE`);
      expect(await deleteIdle()).toBe(0);
      await other.query('COMMIT');
      expect(await deleteIdle()).toBe(1);
    });

    it('a keyed job enqueued while its key row is being deleted re-creates the row, and is claimed', async () => {
      await seedKeyRow('a');
      const cleaner = await f.client();
      const enqueuer = await f.client();
      await cleaner.query('BEGIN');
      expect((await cleaner.query(flowKeysSql.deleteIdleFlowKeys.text, [HOUR, 100])).rowCount).toBe(1);
      // The insert trigger's INSERT ... ON CONFLICT waits for the deleting transaction.
      const [{ pid }] = (await enqueuer.query('SELECT pg_backend_pid() AS pid')).rows;
      const enqueued = enqueuer.query(`INSERT INTO awa.jobs (kind, queue, concurrency_key) VALUES ('k', 'q', 'a')`);
      await waitFor(
        async () =>
          (await f.sql(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [pid]))[0]?.wait_event_type ===
          'Lock',
      );
      await cleaner.query('COMMIT');
      await enqueued;
      expect(await keyRow('a')).toEqual({ running: 0, max_running: null, has_waiting: true, saturated: false });
      expect(await keysOf(await claim(5, 1))).toEqual(['a']);
    });

    it('a keyed job enqueued after its key row was deleted re-creates it and is claimed', async () => {
      await seedKeyRow('a');
      expect(await deleteIdle()).toBe(1);
      expect(await allKeys()).toEqual([]);
      await seedKeyed(f.sql, 'a', 2);
      expect(await keysOf(await claim(5, 1))).toEqual(['a']);
      expect(await keyRow('a')).toMatchObject({ running: 1, saturated: true });
    });
  });

  describe('setKeyLimit', () => {
    const setLimit = (key: string, limit: number | null) => f.run(flowKeysSql.setKeyLimit, ['q', key, limit]);

    it("a key's own limit replaces keyConcurrency in the claim", async () => {
      await seedKeyed(f.sql, 'a', 5);
      await seedKeyed(f.sql, 'b', 5);
      await setLimit('a', 3);
      expect(await keysOf(await claim(20, 1))).toEqual(['a', 'a', 'a', 'b']);
      expect(await keyRow('a')).toMatchObject({ running: 3, max_running: 3, saturated: true });
    });

    it('raising the limit of a saturated key clears `saturated`, notifies its queue, and the next claim takes more', async () => {
      const client = await f.client();
      const jobs = await listen(client, 'awa_jobs');
      await seedKeyed(f.sql, 'a', 5);
      expect(await claim(20, 1)).toHaveLength(1);
      expect(await keyRow('a')).toMatchObject({ running: 1, saturated: true });
      await jobs.take(f.sql);
      expect(await setLimit('a', 3)).toEqual([{ notified: 1 }]);
      expect(await jobs.take(f.sql)).toEqual(['q']);
      expect(await keyRow('a')).toMatchObject({ running: 1, max_running: 3, saturated: false });
      expect(await claim(20, 1)).toHaveLength(2);
    });

    it('lowering the limit below running sets `saturated`; no job starts until running is below it', async () => {
      await seedKeyed(f.sql, 'a', 6);
      await setLimit('a', 3);
      const running = await claim(20, 1);
      expect(running).toHaveLength(3);
      expect(await setLimit('a', 1)).toEqual([{ notified: 0 }]);
      expect(await keyRow('a')).toMatchObject({ running: 3, max_running: 1, saturated: true });
      expect(await claim(20, 1)).toEqual([]);
      await complete(running.slice(0, 2));
      expect(await claim(20, 1)).toEqual([]);
      expect(await keyRow('a')).toMatchObject({ running: 1, saturated: true });
      await complete(running.slice(2));
      expect(await claim(20, 1)).toHaveLength(1);
    });

    it('null gives the key the queue limit back; a key without a row gets none', async () => {
      await seedKeyed(f.sql, 'a', 5);
      await setLimit('a', 0);
      expect(await keyRow('a')).toMatchObject({ running: 0, max_running: 0, saturated: true });
      expect(await claim(20, 2)).toEqual([]);
      expect(await setLimit('a', null)).toEqual([{ notified: 1 }]);
      expect(await keyRow('a')).toMatchObject({ max_running: null, saturated: false });
      expect(await claim(20, 2)).toHaveLength(2);
      expect(await setLimit('nobody', null)).toEqual([{ notified: 0 }]);
      expect(await allKeys()).toEqual(['a']);
    });

    it('a limit for a key never seen creates its row; its first job runs within it', async () => {
      await setLimit('new', 2);
      expect(await keyRow('new')).toEqual({ running: 0, max_running: 2, has_waiting: true, saturated: false });
      await seedKeyed(f.sql, 'new', 4);
      expect(await claim(20, 1)).toHaveLength(2);
      await setLimit('stopped', 0);
      expect(await keyRow('stopped')).toMatchObject({ running: 0, max_running: 0, saturated: true });
    });
  });

  describe('listFlowKeys', () => {
    it("pages a queue's keys by key, with holds in force only and null for a key never served", async () => {
      await seedKeyRow('c', { running: '2', has_waiting: 'true', last_claimed_at: 'now()' });
      await seedKeyRow('a', { held_until: `now() + interval '1 minute'`, last_claimed_at: `'-infinity'` });
      await seedKeyRow('b', { held_until: `now() - interval '1 minute'`, max_running: '4' });
      await f.sql(`INSERT INTO awa.flow_keys (queue, key) VALUES ('other', 'a')`);
      const first = await f.run(flowKeysSql.listFlowKeys, ['q', '', 2]);
      expect(first.map((r) => [r.key, r.max_running, r.held_until !== null, r.last_claimed_at !== null])).toEqual([
        ['a', null, true, false],
        ['b', 4, false, true],
      ]);
      expect(await f.run(flowKeysSql.listFlowKeys, ['q', 'b', 2])).toEqual([
        expect.objectContaining({ key: 'c', running: 2, has_waiting: true, held_until: null }),
      ]);
    });
  });

  it('every statement of flow-keys.sql.ts ran in this file', () => {
    expect(
      statementsOf(flowKeysSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});

/** "<node type> on <table> [using <index>]" for each scan of a plan. */
const scans = (plan: PlanNode) =>
  planNodes(plan)
    .filter((n) => n['Relation Name'] !== undefined && n['Node Type'] !== 'ModifyTable')
    .map((n) => `${n['Node Type']} on ${n['Relation Name']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`);

const KEYS = 20_000;
const IDLE_EVERY = 40;

/**
 * 20,000 keys, one in 40 idle: the cleanup reads flow_keys once (a scan no index can serve) and
 * deletes by TID, touching no other table; the per-key calls go by primary key. Real statistics,
 * the planner's own choices, custom and generic plans; EXPLAIN ANALYZE, rolled back.
 */
describe('flow-keys query plans', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  beforeAll(async () => {
    client = await f.client();
    await f.sql(`INSERT INTO awa.flow_keys (queue, key, running, has_waiting, last_claimed_at)
                 SELECT 'q' || (i % 3), 'key-' || i, i % 2, i % 5 = 0,
                        CASE WHEN i % ${IDLE_EVERY} = 0 THEN now() - interval '2 hours' ELSE now() END
                   FROM generate_series(1, ${KEYS}) i`);
    await f.sql(`UPDATE awa.flow_keys SET running = 0, has_waiting = false WHERE key ~ '^key-\\d+$'
                   AND substr(key, 5)::int % ${IDLE_EVERY} = 0`);
    await f.sql('VACUUM ANALYZE awa.flow_keys');
  });

  const literal = (value: unknown) => (value === null ? 'NULL' : `'${String(value).replace(/'/g, "''")}'`);

  /** The plan of a prepared statement executed with `values`, analyzed and rolled back. */
  async function analyze(text: string, values: unknown[], mode: 'custom' | 'generic'): Promise<PlanNode> {
    await client.query('BEGIN');
    try {
      await client.query(`SET LOCAL plan_cache_mode = force_${mode}_plan`);
      await client.query(`PREPARE awa_explained AS ${text}`);
      const { rows } = await client.query(
        `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE awa_explained(${values.map(literal).join(', ')})`,
      );
      return explainedPlan(rows);
    } finally {
      await client.query('ROLLBACK');
      await client.query('DEALLOCATE ALL');
    }
  }

  it.each(['custom', 'generic'] as const)(
    'deleteIdleFlowKeys (%s plan) reads flow_keys once, probes jobs_flow_idx for available jobs, and deletes by TID',
    async (mode) => {
      const plan = await analyze(flowKeysSql.deleteIdleFlowKeys.text, [HOUR, 5_000], mode);
      // The probe of each candidate (NOT EXISTS an available job of the key), and again at its TID.
      expect(scans(plan).sort()).toEqual([
        'Index Scan on jobs using jobs_flow_idx',
        'Index Scan on jobs using jobs_flow_idx',
        'Seq Scan on flow_keys',
        'Tid Scan on flow_keys',
      ]);
      const [seq] = planNodes(plan).filter((n) => n['Node Type'] === 'Seq Scan');
      expect((seq!['Actual Rows'] ?? 0) + (seq!['Rows Removed by Filter'] ?? 0)).toBe(KEYS);
      const [tid] = planNodes(plan).filter((n) => n['Node Type'] === 'Tid Scan');
      expect(tid!['Actual Rows']).toBe(KEYS / IDLE_EVERY);
    },
  );

  it.each(['custom', 'generic'] as const)(
    'setKeyLimit and listFlowKeys (%s plan) go by flow_keys_pkey',
    async (mode) => {
      const set = await analyze(flowKeysSql.setKeyLimit.text, ['q1', 'key-4', 3], mode);
      // The insert finds the key's row through its arbiter index; any scan goes by primary key too.
      expect(scans(set).filter((s) => !s.endsWith('using flow_keys_pkey'))).toEqual([]);
      expect(planNodes(set).flatMap((n) => n['Conflict Arbiter Indexes'] ?? [])).toEqual(['flow_keys_pkey']);
      const reset = await analyze(flowKeysSql.setKeyLimit.text, ['q1', 'key-4', null], mode);
      expect(scans(reset)).toEqual(['Index Scan on flow_keys using flow_keys_pkey']);
      const list = await analyze(flowKeysSql.listFlowKeys.text, ['q1', 'key-5', 51], mode);
      expect(scans(list)).toEqual(['Index Scan on flow_keys using flow_keys_pkey']);
      const [scan] = planNodes(list).filter((n) => n['Relation Name'] === 'flow_keys');
      expect(scan!['Actual Rows']).toBe(51);
    },
  );
});
