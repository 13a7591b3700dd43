import type pg from 'pg';
import { jobsSql } from '../../lib/sql/index.js';
import { endedWorkflows, queueDepths, workflowCountCutoff } from '../../lib/telemetry/telemetry.sql.js';
import { JOB_TABLE_COLUMNS } from '../../lib/sql/job-row.sql.js';
import { planNodes } from '../support/query-plan.js';
import { insertJobsRows, seedJob, seedRunning } from '../support/job-factory.js';
import { claimer, useSqlFixture } from '../sql/sql-fixture.js';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** The statements of the OpenTelemetry integration, and its traceparent column through insert and claim. */
describe('telemetry.sql', () => {
  const f = useSqlFixture();

  describe('queueDepths', () => {
    it('counts unfinished jobs by queue and state (running: by lease), with the oldest available age', async () => {
      await seedJob(f.sql, { queue: 'a', state: 'available', runAtMs: -60_000 });
      await seedJob(f.sql, { queue: 'a', state: 'available', runAtMs: -1_000 });
      await seedJob(f.sql, { queue: 'a', state: 'scheduled', runAtMs: 60_000 });
      await seedJob(f.sql, { queue: 'b', state: 'retryable', runAtMs: 60_000 });
      await seedRunning(f.sql, { queue: 'b' });
      for (const state of ['completed', 'failed', 'cancelled'])
        await seedJob(f.sql, { queue: 'a', state, finalizedAtMs: -1 });

      const rows = await f.run(queueDepths);
      const byKey = Object.fromEntries(rows.map((r) => [`${r.queue}/${r.state}`, r]));
      expect(Object.keys(byKey).sort()).toEqual(['a/available', 'a/scheduled', 'b/retryable', 'b/running']);
      expect(byKey['a/available']!.count).toBe(2);
      expect(byKey['a/available']!.oldest_available_s).toBeGreaterThanOrEqual(59);
      expect(byKey['a/available']!.oldest_available_s).toBeLessThan(3_600);
      expect(byKey['a/scheduled']).toMatchObject({ count: 1, oldest_available_s: null });
      expect(byKey['b/running']).toMatchObject({ count: 1, oldest_available_s: null });
    });

    it('returns nothing when no job is waiting or running', async () => {
      await seedJob(f.sql, { state: 'completed', finalizedAtMs: -1 });
      expect(await f.run(queueDepths)).toEqual([]);
    });
  });

  describe('traceparent', () => {
    const job = (kind: string, extra: object = {}) => ({
      kind,
      queue: 'default',
      args: {},
      priority: 0,
      max_attempts: 3,
      run_at: null,
      ...extra,
    });

    it('is stored by insertJobs when the payload carries it, and left null when it does not', async () => {
      const [traced, plain] = await f.run(jobsSql.insertJobs, [
        insertJobsRows([job('traced', { traceparent: TRACEPARENT }), job('plain')]),
      ]);
      const rows = await f.sql('SELECT id::text, traceparent FROM awa.all_jobs ORDER BY id');
      expect(rows).toEqual([
        { id: traced!.id, traceparent: TRACEPARENT },
        { id: plain!.id, traceparent: null },
      ]);
    });

    it('comes back from the claim with run_at in epoch ms', async () => {
      await f.run(jobsSql.insertJobs, [insertJobsRows([job('traced', { traceparent: TRACEPARENT })])]);
      const [due] = await f.sql(`SELECT (extract(epoch FROM run_at) * 1000)::float8 AS ms FROM awa.all_jobs`);
      const [claimed] = await claimer(f)('default', ['traced'], 1, 'instance-t');
      expect(claimed).toMatchObject({ traceparent: TRACEPARENT, run_at_ms: due.ms });
    });
  });

  /**
   * Begins a transaction on `client` that no other transaction open on the test database is older
   * than, and returns its now(). Something else may briefly hold one (it happened once in CI, 233 ms
   * older); wait for it to end rather than assert against it. Fails naming what held it.
   */
  async function beginAsOldest(client: pg.Client): Promise<string> {
    let older: unknown[] = [];
    for (let tries = 0; tries < 100; tries++) {
      await client.query('BEGIN');
      const [{ started }] = (await client.query(`SELECT now()::text AS started`)).rows;
      older = await f.sql(
        `SELECT pid, state, xact_start::text, query FROM pg_stat_activity
          WHERE datname = current_database() AND backend_type = 'client backend' AND xact_start < $1::timestamptz`,
        [started],
      );
      if (older.length === 0) return started as string;
      await client.query('ROLLBACK');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`an older transaction stayed open: ${JSON.stringify(older)}`);
  }

  describe('ended workflows', () => {
    const COLUMNS = JOB_TABLE_COLUMNS.join(', ');
    const W = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;
    /** A workflow's jobs: [state, finalized_at relative to now() in s (null: unfinished)]; finished ones moved to history. */
    const seedWorkflow = async (n: number, jobs: Array<[string, number | null]>) => {
      for (const [state, at] of jobs)
        await f.sql(
          `INSERT INTO awa.jobs (kind, queue, state, workflow_id, finalized_at)
           VALUES ('k', 'q', $1, $2, CASE WHEN $3::float8 IS NULL THEN NULL ELSE now() + $3::float8 * interval '1 second' END)`,
          [state, W(n), at],
        );
      await f.sql(`WITH m AS (DELETE FROM awa.jobs WHERE state IN ('completed', 'failed', 'cancelled') RETURNING *)
                   INSERT INTO awa.job_history (${COLUMNS}, segment)
                   SELECT ${COLUMNS}, CASE WHEN m.state = 'completed' THEN 0 ELSE 8 END FROM m`);
    };
    const window = async (fromS: number, toS: number) => {
      const [{ since, cutoff }] = await f.sql(
        `SELECT (now() + $1::float8 * interval '1 second')::text AS since,
                (now() + $2::float8 * interval '1 second')::text AS cutoff`,
        [fromS, toS],
      );
      const rows = await f.run(endedWorkflows, [since, cutoff]);
      return Object.fromEntries(rows.map((r) => [r.outcome, r.count]));
    };

    it('counts the workflows whose last job ended in the window, by outcome', async () => {
      await seedWorkflow(1, [
        ['completed', -50],
        ['completed', -20],
      ]);
      await seedWorkflow(2, [
        ['completed', -50],
        ['failed', -30],
        ['cancelled', -20],
      ]);
      await seedWorkflow(3, [
        ['cancelled', -40],
        ['completed', -20],
      ]);
      await seedWorkflow(4, [
        ['completed', -20],
        ['available', null],
      ]); // still running
      await seedWorkflow(5, [
        ['completed', -20],
        ['completed', -5],
      ]); // its last ending is after the window
      await seedWorkflow(6, [['completed', -200]]); // ended before the window
      await seedJob(f.sql, { state: 'completed', finalizedAtMs: -20_000 }); // a plain job
      expect(await window(-100, -10)).toEqual({ completed: 1, failed: 1, cancelled: 1 });
      expect(await window(-10, 0)).toEqual({ completed: 1 });
    });

    it('reads the finished workflow jobs of the window from job_history_workflow_finalized_idx', async () => {
      const partial = (
        await f.sql(`SELECT indexname FROM pg_indexes WHERE schemaname = 'awa' AND indexdef LIKE '%(finalized_at)%'
                       AND indexdef LIKE '%workflow_id IS NOT NULL%'`)
      ).map((r) => r.indexname as string);
      const client = await f.client();
      await client.query('BEGIN');
      try {
        await client.query('SET LOCAL enable_seqscan = off');
        const { rows } = await client.query({
          text: `EXPLAIN (FORMAT JSON) ${endedWorkflows.text}`,
          values: [new Date(Date.now() - 60_000).toISOString(), new Date().toISOString()],
        });
        const used = planNodes(rows[0]['QUERY PLAN'][0].Plan).map((n) => n['Index Name']);
        expect(used.some((name) => partial.includes(name as string))).toBe(true);
      } finally {
        await client.query('ROLLBACK');
      }
    });

    it('cuts the window at the start of the oldest open transaction, and never before the last cutoff', async () => {
      const open = await f.client();
      const started = await beginAsOldest(open);
      try {
        const [first] = await f.run(workflowCountCutoff, [null]);
        expect(first!.cutoff).toBe(started);
        const [{ later }] = await f.sql(`SELECT (now() + interval '1 hour')::text AS later`);
        const [kept] = await f.run(workflowCountCutoff, [later]);
        expect(kept!.cutoff).toBe(later);
      } finally {
        await open.query('ROLLBACK');
      }
    });
  });
});
