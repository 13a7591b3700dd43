import { claimSql, workerSql } from '../../lib/sql/index.js';
import { claimer, execOn, leaseCount, readJob, sortedIds, statementsOf, useSqlFixture } from './sql-fixture.js';
import { seedJob } from '../support/job-factory.js';

/** The claim: the statement that takes a queue's next jobs for a worker, with their leases. */
describe('claim.sql', () => {
  const f = useSqlFixture();
  const claim = claimer(f);

  describe('claimJobs', () => {
    it('makes its rows with its row factory, value for value as pg reads the same columns, kind and queue from its own values', async () => {
      // Separators inside the args and the kind (a kind may hold any character but NUL) must not split a row.
      const kind = 'k\x1ekind\x1f';
      const args = { n: 1, s: 'a\x1eb\x1fc', nested: [{ x: null }] };
      const id = await seedJob(f.sql, { kind, args, priority: -3, maxAttempts: 7 });
      const workflowId = '0b8f3c52-6f7e-4d7b-9d8e-1f2a3b4c5d6e';
      const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      await f.sql(`UPDATE awa.jobs SET traceparent = $2, workflow_id = $3 WHERE id = $1`, [
        id,
        traceparent,
        workflowId,
      ]);
      const other = await seedJob(f.sql, { kind: 'plain' });
      const client = await f.client();
      await client.query('BEGIN');
      try {
        const kinds = ['plain', kind];
        const rows = await f.run(
          claimSql.claimJobs,
          ['default', kinds, 10, 'instance-a', 0, ...claimSql.fromIndexStart(kinds)],
          client,
        );
        const read = async (job: string) =>
          (await client.query(`SELECT ${claimSql.claimedSelectList()} FROM awa.jobs WHERE id = $1`, [job])).rows[0];
        const byId = new Map(rows.map((r) => [r.id, r]));
        expect(byId.get(id)).toEqual({ ...(await read(id)), queue: 'default' });
        expect(byId.get(id)).toMatchObject({
          kind,
          args,
          attempt: 1,
          max_attempts: 7,
          priority: -3,
          traceparent,
          workflow_id: workflowId,
        });
        expect(byId.get(other)).toEqual({ ...(await read(other)), queue: 'default' });
        expect(byId.get(other)).toMatchObject({ kind: 'plain', traceparent: null, workflow_id: null });
        // The kind is the claim's own string, not a copy per row.
        expect(byId.get(id)!.kind).toBe(kinds[1]);
        expect(rows).toHaveLength(2);
      } finally {
        await client.query('ROLLBACK');
      }
    });

    it('unpacks to no rows when it claims nothing', async () => {
      expect(await claim('default', ['k'], 10)).toEqual([]);
    });

    it('takes jobs by priority, then run_at, then id, across available and due jobs', async () => {
      const t = new Date(Date.now() - 3_600_000);
      const at = (ms: number) => new Date(t.getTime() + ms);
      // Seeded in id order; ties on (priority, run_at) are broken by id, whatever the state.
      const e = await seedJob(f.sql, { state: 'scheduled', priority: -2, runAt: at(0) });
      const c = await seedJob(f.sql, { state: 'available', priority: -2, runAt: at(0) });
      const a = await seedJob(f.sql, { state: 'available', priority: 5, runAt: at(-5_000) });
      const b = await seedJob(f.sql, { state: 'available', priority: -2, runAt: at(1_000) });
      const d = await seedJob(f.sql, { state: 'retryable', priority: 0, runAt: at(0), attempt: 1, runLease: 1 });
      const g = await seedJob(f.sql, { state: 'available', priority: 0, runAt: at(0) });
      await seedJob(f.sql, { state: 'scheduled', priority: -10, runAtMs: 3_600_000 }); // not due: never claimed
      const order: string[] = [];
      for (;;) {
        const rows = await claim('default', ['k'], 1);
        if (rows.length === 0) break;
        expect(rows).toHaveLength(1);
        order.push(rows[0]!.id);
      }
      expect(order).toEqual([e, c, b, d, g, a]);
    });

    it('reads each kind after its key (ClaimAfter): jobs at or before it stay, the ones after are taken in order', async () => {
      const t = new Date(Date.now() - 3_600_000);
      const at = (ms: number) => new Date(t.getTime() + ms);
      const before = await seedJob(f.sql, { priority: 1, runAt: at(5_000) }); // a lower priority comes first
      const key = await seedJob(f.sql, { priority: 2, runAt: at(1_000) });
      const sameTimeLaterId = await seedJob(f.sql, { priority: 2, runAt: at(1_000) });
      const earlierTime = await seedJob(f.sql, { priority: 2, runAt: at(0) });
      const laterTime = await seedJob(f.sql, { priority: 2, runAt: at(2_000) });
      const otherKind = await seedJob(f.sql, { kind: 'other', priority: 0, runAt: at(0) });
      const rows = await f.run(claimSql.claimJobs, [
        'default',
        ['k', 'other'],
        10,
        'instance-a',
        0,
        [2, claimSql.INDEX_START.priority],
        [(t.getTime() + 1_000) * 1_000, claimSql.INDEX_START.runAtUs],
        [key, claimSql.INDEX_START.id],
      ]);
      expect(sortedIds(rows)).toEqual([sameTimeLaterId, laterTime, otherKind].sort());
      const left = await f.sql(`SELECT id::text FROM awa.jobs WHERE state = 'available' ORDER BY id`);
      expect(left.map((r: { id: string }) => r.id)).toEqual([before, key, earlierTime]);
    });

    it('takes at most `limit` jobs, the first ones in claim order', async () => {
      const seeded = [];
      for (const priority of [3, 1, 4, 1, 5, 9, 2, 6])
        seeded.push({ id: await seedJob(f.sql, { priority }), priority });
      const rows = await claim('default', ['k'], 3);
      const expected = [...seeded].sort((x, y) => x.priority - y.priority || Number(x.id) - Number(y.id)).slice(0, 3);
      expect(sortedIds(rows)).toEqual(sortedIds(expected));
      const left = await f.sql(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'available'`);
      expect(left).toEqual([{ n: 5 }]);
    });

    it('takes only jobs of the given queue and kinds, and only waiting ones that are due', async () => {
      const mine = [
        await seedJob(f.sql, { queue: 'q', kind: 'k1' }),
        await seedJob(f.sql, { queue: 'q', kind: 'k2' }),
        await seedJob(f.sql, { queue: 'q', kind: 'k1', state: 'scheduled', runAtMs: -1 }),
        await seedJob(f.sql, { queue: 'q', kind: 'k2', state: 'retryable', runAtMs: -1_000, attempt: 1, runLease: 1 }),
      ];
      const others = [
        await seedJob(f.sql, { queue: 'other', kind: 'k1' }),
        await seedJob(f.sql, { queue: 'q', kind: 'k3' }),
        await seedJob(f.sql, { queue: 'q', kind: 'k1', state: 'scheduled', runAtMs: 60_000 }),
        await seedJob(f.sql, { queue: 'q', kind: 'k1', state: 'retryable', runAtMs: 60_000, attempt: 1, runLease: 1 }),
        ...(await Promise.all(
          ['running', 'completed', 'failed', 'cancelled'].map((state) =>
            seedJob(f.sql, { queue: 'q', kind: 'k1', state, attempt: 1, runLease: 1 }),
          ),
        )),
      ];
      const rows = await claim('q', ['k1', 'k2'], 100);
      expect(sortedIds(rows)).toEqual([...mine].sort());
      const untouched = await f.sql(
        `SELECT count(*)::int AS n FROM awa.all_jobs WHERE id = ANY($1::bigint[]) AND attempted_at IS NULL`,
        [others],
      );
      expect(untouched).toEqual([{ n: others.length }]);
      expect(await leaseCount(f)).toBe(mine.length);
      expect(await claim('q', ['k1', 'k2'], 100)).toEqual([]);
    });

    it(
      'sets running, increments attempt, gives a new run lease (the clock in µs), and inserts one lease ' +
        'with heartbeat now() and deadline now() + deadline; the rows take their queue from the claim ' +
        '(its $1)',
      async () => {
        const fresh = await seedJob(f.sql, { kind: 'k', args: { n: 1 }, priority: 2, maxAttempts: 4 });
        const retry = await seedJob(f.sql, { kind: 'k', state: 'retryable', runAtMs: -10, attempt: 2, runLease: 7 });
        const tx = await f.client();
        await tx.query('BEGIN');
        try {
          const clock = await execOn(tx)(
            `SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint::text AS us`,
          );
          const rows = await claim('default', ['k'], 10, 'instance-x', 90_000, tx);
          // The clock in µs at the claim (both jobs in one statement: the same lease number).
          const lease = rows[0]!.run_lease;
          expect(BigInt(lease)).toBeGreaterThanOrEqual(BigInt(clock[0].us));
          const byId = new Map(rows.map((r) => [r.id, r]));
          expect(byId.get(fresh)).toEqual({
            id: fresh,
            kind: 'k',
            queue: 'default',
            args: { n: 1 },
            attempt: 1,
            max_attempts: 4,
            priority: 2,
            run_lease: lease,
            created_ms: expect.any(Number),
            run_at_ms: expect.any(Number),
            traceparent: null,
            workflow_id: null,
          });
          expect(byId.get(retry)).toMatchObject({ attempt: 3, run_lease: lease });
          const leases = await execOn(tx)(
            `SELECT job_id::text, run_lease::text, instance_id, heartbeat_at = now() AS heartbeat_now,
                  claimed_at = now() AS claimed_now, deadline_at = now() + interval '90 seconds' AS deadline_right
             FROM awa.active_leases ORDER BY active_leases.job_id`,
          );
          expect(leases).toEqual(
            [fresh, retry]
              .sort((x, y) => Number(x) - Number(y))
              .map((id) => ({
                job_id: id,
                run_lease: lease,
                instance_id: 'instance-x',
                heartbeat_now: true,
                claimed_now: true,
                deadline_right: true,
              })),
          );
          const jobs = await execOn(tx)(
            `SELECT id::text, state, attempt, run_lease::text, attempted_at = now() ` +
              `AS attempted_now FROM awa.all_jobs ORDER BY all_jobs.id`,
          );
          expect(jobs).toEqual([
            { id: fresh, state: 'running', attempt: 1, run_lease: lease, attempted_now: true },
            { id: retry, state: 'running', attempt: 3, run_lease: lease, attempted_now: true },
          ]);
        } finally {
          await tx.query('COMMIT');
        }
      },
    );

    it('gives a lease above the last one, even when that one is beyond the clock', async () => {
      const ahead = (Date.now() + 3_600_000) * 1000; // µs an hour ahead (below 2^53: exact)
      const id = await seedJob(f.sql, { state: 'retryable', runAtMs: -10, attempt: 1, runLease: ahead });
      expect(await claim('default', ['k'], 1)).toMatchObject([{ id, run_lease: String(ahead + 1) }]);
    });

    it("returns created_ms and run_at_ms exactly as extract()'s epoch ms, to the microsecond", async () => {
      // Due timestamps with their microsecond digits set: the claim's cheap
      // date_part form must give the same float8 as the exact numeric one (the ClaimCursor keys on it).
      const at = [
        '2001-09-09 01:46:40.000001+00',
        '2026-12-05 02:04:05.999999+00',
        '2026-12-05 02:04:05.123456+00',
        '1999-12-31 23:59:59.999001+00',
        '2025-06-01 14:53:15.917225+00', // date_part('epoch', t) * 1000 alone is off in the last bit here
      ];
      for (let i = 0; i < at.length; i++) await seedJob(f.sql, { state: 'scheduled', runAt: new Date(0) });
      await f.sql(
        `UPDATE awa.jobs j SET run_at = x.t::timestamptz, created_at = x.t::timestamptz - interval '1.000007 seconds'
           FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM awa.jobs) o, unnest($1::text[]) WITH ORDINALITY x(t, n)
          WHERE j.id = o.id AND o.n = x.n`,
        [at],
      );
      const exact = await f.sql(
        `SELECT id::text, (extract(epoch FROM created_at) * 1000)::float8 AS created_ms,
                (extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms FROM awa.jobs`,
      );
      const rows = await claim('default', ['k'], 10);
      expect(rows).toHaveLength(at.length);
      const claimed = new Map(rows.map((r) => [r.id, { created_ms: r.created_ms, run_at_ms: r.run_at_ms }]));
      for (const e of exact) expect(claimed.get(e.id)).toEqual({ created_ms: e.created_ms, run_at_ms: e.run_at_ms });
      // The cursor's key (ClaimCursor) gets the exact microsecond back.
      expect(rows.map((r) => Math.round(r.run_at_ms * 1_000) % 1_000_000).sort()).toEqual([
        1, 123456, 917225, 999001, 999999,
      ]);
    });

    it(
      'a claim whose commit is lost (a server crash with asynchronous commits, here a rollback) ' +
        'never hands its lease out again: the lost attempt’s writes fail the fence of the next one',
      async () => {
        const id = await seedJob(f.sql);
        const lost = await f.client();
        await lost.query('BEGIN');
        const [lostClaim] = await claim('default', ['k'], 1, 'instance-a', 0, lost);
        await lost.query('ROLLBACK'); // the database as after the crash: the job available, its old lease
        expect(await readJob(f.sql, id)).toMatchObject({ state: 'available' });
        await new Promise((r) => setTimeout(r, 2)); // the next claim comes later on the clock
        const [next] = await claim('default', ['k'], 1, 'instance-b');
        expect(next!.id).toBe(id);
        expect(BigInt(next!.run_lease)).toBeGreaterThan(BigInt(lostClaim!.run_lease));
        // The lost attempt, still running somewhere, completes: fenced. The new one's completion lands.
        expect(await f.run(workerSql.completeJobs, [[id], [lostClaim!.run_lease]])).toEqual([
          { id, run_lease: lostClaim!.run_lease },
        ]);
        expect(await f.run(workerSql.completeJobs, [[id], [next!.run_lease]])).toEqual([]); // none missed
      },
    );

    it('leaves deadline_at NULL when the deadline is 0', async () => {
      const id = await seedJob(f.sql);
      await claim('default', ['k'], 1, 'instance-a', 0);
      expect(await f.sql(`SELECT deadline_at FROM awa.active_leases WHERE job_id = $1`, [id])).toEqual([
        { deadline_at: null },
      ]);
    });

    it('never gives one job to two claims running at once', async () => {
      for (let i = 0; i < 10; i++) await seedJob(f.sql);
      const a = await f.client();
      await a.query('BEGIN');
      const first = await claim('default', ['k'], 3, 'instance-a', 0, a);
      // While the first claim's transaction is open, its rows are locked: the second skips them.
      const second = await claim('default', ['k'], 10, 'instance-b');
      await a.query('COMMIT');
      expect(first).toHaveLength(3);
      expect(second).toHaveLength(7);
      expect(new Set([...sortedIds(first), ...sortedIds(second)]).size).toBe(10);
      expect(
        await f.sql(`SELECT instance_id, count(*)::int AS n FROM awa.active_leases GROUP BY 1 ORDER BY 1`),
      ).toEqual([
        { instance_id: 'instance-a', n: 3 },
        { instance_id: 'instance-b', n: 7 },
      ]);
    });

    it('hands out each job exactly once to many concurrent claimers', async () => {
      const total = 120;
      await f.sql(
        `INSERT INTO awa.jobs (kind, state, run_at, attempt, run_lease)
                   SELECT 'k', CASE WHEN i % 3 = 0 THEN 'retryable' ELSE 'available' END, now() - (i ||
                     ' ms')::interval,
                          CASE WHEN i % 3 = 0 THEN 1 ELSE 0 END, CASE WHEN i % 3 = 0 THEN 1 ELSE 0 END
                     FROM generate_series(1, $1::int) i`,
        [total],
      );
      const attemptsBefore = await f.sql(`SELECT id::text, attempt FROM awa.jobs ORDER BY id`);
      const claimer = async (instance: string) => {
        const mine: string[] = [];
        for (;;) {
          const rows = await claim('default', ['k'], 4, instance);
          if (rows.length === 0) return mine;
          mine.push(...rows.map((r) => r.id));
        }
      };
      const claimed = (await Promise.all(['c1', 'c2', 'c3', 'c4'].map(claimer))).flat();
      expect(claimed).toHaveLength(total);
      expect(new Set(claimed).size).toBe(total);
      expect(await leaseCount(f)).toBe(total);
      expect(await f.sql(`SELECT state, count(*)::int AS n FROM awa.all_jobs GROUP BY state`)).toEqual([
        { state: 'running', n: total },
      ]);
      // Each job was claimed once: one attempt more than it had, and one lease row, its own lease's.
      expect(
        await f.sql(`SELECT count(*)::int AS n FROM awa.all_jobs j
                           WHERE j.run_lease IS DISTINCT FROM (SELECT max(run_lease) FROM awa.active_leases l WHERE l.job_id = j.id)`),
      ).toEqual([{ n: 0 }]);
      expect(await f.sql(`SELECT id::text, attempt - 1 AS attempt FROM awa.jobs ORDER BY id`)).toEqual(attemptsBefore);
    });
  });

  it('ran every statement of claim.sql', () => {
    expect(
      statementsOf(claimSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
