import { setTimeout as sleep } from 'node:timers/promises';
import { DataSource } from 'typeorm';
import { AwaClaimWorkflowId1765000000000 } from '../../migrations/index.js';
import { flowSql, workerSql } from '../../lib/sql/index.js';
import type { FlowClaimRow } from '../../lib/sql/flow.sql.js';
import { maxInWindow, resetFlow, seedKeyed } from '../flow/flow-fixture.js';
import { claimer, readJob, useSqlFixture } from './sql-fixture.js';

/** The flow-control statements: the claim within rate limit, holds and key limits, and the back-off. */
describe('flow.sql', () => {
  const f = useSqlFixture();
  beforeEach(() => resetFlow(f.sql));

  const claim = (
    want: number,
    o: { rate?: number; periodMs?: number; keys?: number; queue?: string; bufferMs?: number } = {},
  ) =>
    f.run(flowSql.claimFlowJobs, [
      o.queue ?? 'q',
      ['k'],
      want,
      'instance-a',
      0,
      o.rate ?? 0,
      o.periodMs ?? 0,
      o.keys ?? 0,
      o.bufferMs ?? 0,
    ]);
  const jobs = (rows: FlowClaimRow[]) => rows.filter((r) => r.id !== null);
  const waitOf = (rows: FlowClaimRow[]) => rows.find((r) => r.id === null)?.wait_ms ?? null;
  const keyRow = async (key: string) =>
    (await f.sql(`SELECT running, has_waiting, saturated FROM awa.flow_keys WHERE queue = 'q' AND key = $1`, [key]))[0];
  const complete = (rows: FlowClaimRow[]) => {
    const claimed = jobs(rows) as Array<{ id: string; run_lease: string }>;
    return f.run(workerSql.completeJobs, [claimed.map((r) => r.id), claimed.map((r) => r.run_lease)]);
  };

  describe('rate limit', () => {
    it('starts at most `limit` attempts per period and says how long until the next one may start', async () => {
      await seedKeyed(f.sql, null, 10);
      expect(jobs(await claim(3, { rate: 5, periodMs: 60_000 }))).toHaveLength(3);
      const second = await claim(3, { rate: 5, periodMs: 60_000 });
      expect(jobs(second)).toHaveLength(2);
      expect(waitOf(second)).toBeGreaterThan(50_000);
      const third = await claim(3, { rate: 5, periodMs: 60_000 });
      expect(jobs(third)).toHaveLength(0);
      expect(waitOf(third)).toBeGreaterThan(50_000);
      const [{ n }] = await f.sql(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'available'`);
      expect(n).toBe(5);
    });

    it('counts its log over period + the buffer wait, and says when the oldest claim leaves that window', async () => {
      await seedKeyed(f.sql, null, 10);
      const first = await claim(5, { rate: 5, periodMs: 60_000, bufferMs: 30_000 });
      expect(jobs(first)).toHaveLength(5);
      // Without the buffer wait the window would end within 60 s.
      expect(waitOf(first)).toBeGreaterThan(80_000);
      const second = await claim(5, { rate: 5, periodMs: 60_000, bufferMs: 30_000 });
      expect(jobs(second)).toHaveLength(0);
      expect(waitOf(second)).toBeGreaterThan(80_000);
    });

    it('counts a claim until its own end, whatever buffer wait a later claim passes (instances with different entry waits)', async () => {
      await seedKeyed(f.sql, null, 10);
      // An instance whose jobs may start up to 30 s after its claim takes the whole limit...
      expect(jobs(await claim(5, { rate: 5, periodMs: 1_000, bufferMs: 30_000 }))).toHaveLength(5);
      // ...and, more than a period later, an instance with no buffer wait claims: the first claim's jobs
      // may still start within a period of this one's, so it counts. (The sleep only has to pass one
      // period; any longer stall up to the first claim's 30 s end proves the same.)
      await sleep(1_100);
      const second = await claim(5, { rate: 5, periodMs: 1_000, bufferMs: 0 });
      expect(jobs(second)).toHaveLength(0);
      expect(waitOf(second)).toBeGreaterThan(20_000);
    });

    it('returns run_at, the trace parent and the workflow of each claimed job, keyed or not', async () => {
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      const workflowId = '5f0c6e4e-8d3c-4b8e-9a57-1b2c3d4e5f60';
      await f.sql(
        `INSERT INTO awa.jobs (kind, queue, concurrency_key, run_at, traceparent, workflow_id)
         VALUES ('k', 'q', NULL, '2020-01-02T03:04:05Z', $1, NULL), ('k', 'q', 'a', '2021-01-02T03:04:05Z', NULL, $2)`,
        [traceparent, workflowId],
      );
      const [plain] = jobs(await claim(1, { rate: 10, periodMs: 1_000 }));
      expect(plain).toMatchObject({ run_at_ms: Date.parse('2020-01-02T03:04:05Z'), traceparent, workflow_id: null });
      const [keyed] = jobs(await claim(1, { keys: 1 }));
      expect(keyed).toMatchObject({
        run_at_ms: Date.parse('2021-01-02T03:04:05Z'),
        traceparent: null,
        workflow_id: workflowId,
      });
    });

    it('keeps every window of one period within the limit over the recorded attempted_at', async () => {
      await seedKeyed(f.sql, null, 24);
      for (let left = 24; left > 0;) {
        const rows = await claim(4, { rate: 5, periodMs: 150 });
        left -= jobs(rows).length;
        const wait = waitOf(rows);
        if (wait !== null) await sleep(Math.ceil(wait));
      }
      const stamps = await f.sql(`SELECT extract(epoch FROM attempted_at)::float8 * 1000 AS at FROM awa.all_jobs`);
      expect(stamps).toHaveLength(24);
      expect(
        maxInWindow(
          stamps.map((s) => s.at as number),
          150,
        ),
      ).toBeLessThanOrEqual(5);
    });
  });

  describe('key concurrency', () => {
    it('runs at most `keyConcurrency` attempts of a key, and a deleted lease gives its slot back', async () => {
      await seedKeyed(f.sql, 'a', 5);
      const first = await claim(10, { keys: 2 });
      expect(jobs(first)).toHaveLength(2);
      expect(jobs(await claim(10, { keys: 2 }))).toHaveLength(0);
      expect(await keyRow('a')).toEqual({ running: 2, has_waiting: true, saturated: true });
      await complete(first);
      expect(await keyRow('a')).toEqual({ running: 0, has_waiting: true, saturated: false });
      expect(jobs(await claim(10, { keys: 2 }))).toHaveLength(2);
    });

    it('goes round-robin across keys: one job of each key per round, least recently served key first', async () => {
      await seedKeyed(f.sql, 'big', 20);
      await seedKeyed(f.sql, 'b', 2);
      await seedKeyed(f.sql, 'c', 2);
      const order: string[] = [];
      for (;;) {
        const rows = jobs(await claim(1, { keys: 100 }));
        if (rows.length === 0) break;
        const [{ key }] = await f.sql(`SELECT concurrency_key AS key FROM awa.all_jobs WHERE id = $1::bigint`, [
          rows[0]!.id,
        ]);
        order.push(key as string);
      }
      expect(order.slice(0, 6)).toEqual(['big', 'b', 'c', 'big', 'b', 'c']);
      expect(order.slice(6)).toEqual(Array(18).fill('big'));
    });

    it('within a rate limit takes no more than the tokens left, whatever the free key slots', async () => {
      await seedKeyed(f.sql, 'a', 5);
      await seedKeyed(f.sql, 'b', 5);
      const rows = await claim(10, { keys: 5, rate: 3, periodMs: 60_000 });
      expect(jobs(rows)).toHaveLength(3);
      expect(waitOf(rows)).toBeGreaterThan(50_000);
      expect(jobs(await claim(10, { keys: 5, rate: 3, periodMs: 60_000 }))).toHaveLength(0);
    });

    it('marks the keys of one enqueue statement, and only keyed available jobs', async () => {
      await f.sql(`INSERT INTO awa.jobs (kind, queue, concurrency_key, state, run_at)
                   VALUES ('k', 'q', 'z', 'available', now()), ('k', 'q', 'y', 'available', now()),
                          ('k', 'q', NULL, 'available', now()),
                          ('k', 'q', 'later', 'scheduled', now() + interval '1 h')`);
      const keys = await f.sql(`SELECT key FROM awa.flow_keys ORDER BY key`);
      expect(keys).toEqual([{ key: 'y' }, { key: 'z' }]);
    });

    it('forgets a key with nothing waiting until a job of it becomes available again', async () => {
      await seedKeyed(f.sql, 'a', 1);
      await complete(await claim(5, { keys: 3 }));
      expect(jobs(await claim(5, { keys: 3 }))).toHaveLength(0);
      expect((await keyRow('a'))?.has_waiting).toBe(false);
      await seedKeyed(f.sql, 'a', 1);
      expect((await keyRow('a'))?.has_waiting).toBe(true);
      expect(jobs(await claim(5, { keys: 3 }))).toHaveLength(1);
    });

    it('claims due scheduled and retryable keyed jobs itself, without the promotion sweep; not jobs yet due', async () => {
      const [scheduled, retryable, later] = [
        ...(await seedKeyed(f.sql, 'a', 1)),
        ...(await seedKeyed(f.sql, 'b', 1)),
        ...(await seedKeyed(f.sql, 'c', 1)),
      ] as [string, string, string];
      await f.sql(
        `UPDATE awa.jobs SET state = CASE WHEN id = $1 THEN 'scheduled' WHEN id = $2 THEN 'retryable' ELSE 'scheduled' END,
                run_at = CASE WHEN id = $3 THEN now() + interval '1 hour' ELSE now() - interval '1 second' END`,
        [scheduled, retryable, later],
      );
      // The keys were marked when the jobs were inserted available; clear them, as a claim that
      // found nothing waiting does, so only the claim's own promotion can mark them again.
      await f.sql(`UPDATE awa.flow_keys SET has_waiting = false`);
      const claimed = jobs(await claim(5, { keys: 3 }));
      expect(claimed.map((r) => r.id).sort()).toEqual([scheduled, retryable].sort());
      expect((await readJob(f.sql, later))?.state).toBe('scheduled');
      expect((await keyRow('c'))?.has_waiting).toBe(false);
    });
  });

  describe('rateLimitJob', () => {
    it('gives the attempt back unspent and holds back the whole queue', async () => {
      const [id] = await seedKeyed(f.sql, null, 2);
      const [row] = jobs(await claim(1, { rate: 100, periodMs: 1_000 })) as Array<{ id: string; run_lease: string }>;
      expect(row!.id).toBe(id);
      expect(await f.run(flowSql.rateLimitJob, [row!.id, row!.run_lease, 60_000, true, false])).toEqual([
        { id, state: 'available' },
      ]);
      expect(await readJob(f.sql, id!)).toMatchObject({ state: 'available', attempt: 0 });
      const held = await claim(5, { rate: 100, periodMs: 1_000 });
      expect(jobs(held)).toHaveLength(0);
      expect(waitOf(held)).toBeGreaterThan(50_000);
    });

    it('with key concurrency holds back only the key of the job', async () => {
      const [a] = await seedKeyed(f.sql, 'a', 2);
      await seedKeyed(f.sql, 'b', 2);
      const rows = jobs(await claim(2, { keys: 1 })) as Array<{ id: string; run_lease: string }>;
      const ofA = rows.find((r) => r.id === a)!;
      await f.run(flowSql.rateLimitJob, [ofA.id, ofA.run_lease, 60_000, true, true]);
      await complete(rows.filter((r) => r !== ofA) as FlowClaimRow[]);
      const next = jobs(await claim(5, { keys: 1 }));
      const keys = await f.sql(`SELECT DISTINCT concurrency_key AS k FROM awa.all_jobs WHERE id = ANY($1::bigint[])`, [
        next.map((r) => r.id),
      ]);
      expect(keys).toEqual([{ k: 'b' }]);
    });

    it('schedules the job for the end of the hold in a queue without flow control', async () => {
      const [id] = await seedKeyed(f.sql, null, 1);
      const [row] = await claimer(f)('q', ['k'], 1);
      await f.run(flowSql.rateLimitJob, [row!.id, row!.run_lease, 60_000, false, false]);
      const job = await readJob(f.sql, id!);
      expect(job).toMatchObject({ state: 'scheduled', attempt: 0 });
      expect(job!.run_at_in_ms).toBeGreaterThan(50_000);
    });
  });

  // Last: it replaces the function under the pool's prepared statements, so it reads with plain SQL.
  it('migration AwaClaimWorkflowId returns the workflow id from the flow claim, and down() puts v3 back', async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: f.url, logging: false }).initialize();
    const runner = dataSource.createQueryRunner();
    const migration = new AwaClaimWorkflowId1765000000000();
    const columns = async () =>
      (await f.pool.query(`SELECT * FROM awa.claim_flow('none', '{k}', 1, 'i', 0, 0, 0, 0, 0)`)).fields.map(
        (field) => field.name,
      );
    try {
      expect(await columns()).toContain('workflow_id');
      await migration.down(runner);
      expect(await columns()).toEqual(expect.not.arrayContaining(['workflow_id']));
      expect(await f.sql(`SELECT to_regclass('awa.job_history_workflow_finalized_idx') AS i`)).toEqual([{ i: null }]);
      await migration.up(runner);
      expect(await columns()).toContain('workflow_id');
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
  });
});
