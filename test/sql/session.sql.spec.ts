import { claimSql, sessionSql } from '../../lib/sql/index.js';
import { scanLabel, explainedPlan, readsOf } from '../support/query-plan.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';
import { waitFor } from '../support/wait-for.js';

/** Statements on a connection itself: LISTEN, its statement timeout, ending a backend. */
describe('session.sql', () => {
  const f = useSqlFixture({ reset: false });

  describe('listen', () => {
    it('subscribes the session to a channel, as a named statement', async () => {
      const client = await f.client();
      const statement = sessionSql.listen('awa_jobs');
      expect(statement.name).toBe('awa_listen_awa_jobs');
      const payloads: string[] = [];
      client.on('notification', (msg) => payloads.push(`${msg.channel}:${msg.payload}`));
      await f.run(statement, [], client);
      await f.sql(`SELECT pg_notify('awa_jobs', 'hello')`);
      await waitFor(async () => payloads.length > 0, 15_000, 'the notification');
      expect(payloads).toEqual(['awa_jobs:hello']);
    });

    it('quotes the channel name', () => {
      expect(sessionSql.listen('we"ird').text).toBe('LISTEN "we""ird"');
    });
  });

  describe('terminateBackend', () => {
    it('ends the given backend, rolling back its open transaction and freeing its locks', async () => {
      const victim = await f.client();
      const pid = (victim as unknown as { processID: number }).processID;
      await victim.query('BEGIN');
      await victim.query(`SELECT pg_advisory_xact_lock(4242)`);
      expect(await f.run(sessionSql.terminateBackend, [pid])).toEqual([{ terminated: true }]);
      await waitFor(
        async () => (await f.sql('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).length === 0,
        15_000,
        'the backend to end',
      );
      expect(await f.sql('SELECT pg_try_advisory_lock(4242) AS free, pg_advisory_unlock(4242)')).toEqual([
        { free: true, pg_advisory_unlock: true },
      ]);
    });
  });

  describe('setLocalStatementTimeout', () => {
    it('sets statement_timeout and JIT off until the transaction ends, and stops a statement that outlives it', async () => {
      const client = await f.client();
      await client.query('SET jit = on'); // the server's default
      await client.query('BEGIN');
      expect(await f.run(sessionSql.setLocalStatementTimeout, ['250'], client)).toEqual([
        { statement_timeout: '250ms', jit: 'off' },
      ]);
      await expect(client.query('SELECT pg_sleep(30)')).rejects.toThrow(/canceling statement due to statement timeout/);
      await client.query('ROLLBACK');
      expect((await client.query('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '0' }]);
      expect((await client.query('SHOW jit')).rows).toEqual([{ jit: 'on' }]);
    });
  });

  describe('setClaimSession', () => {
    const planned = {
      synchronous_commit: 'off',
      enable_seqscan: 'off',
      enable_bitmapscan: 'off',
      plan_cache_mode: 'force_generic_plan',
      jit: 'off',
    };
    it('sets statement_timeout, asynchronous commits, ordered index reads, kept plans and JIT off for the whole session', async () => {
      const client = await f.client();
      expect(await f.run(sessionSql.setClaimSession, ['250'], client)).toEqual([
        { statement_timeout: '250ms', ...planned },
      ]);
      await client.query('BEGIN');
      await client.query('COMMIT'); // a session setting, not a transaction's: it outlives the commit
      expect((await client.query('SHOW synchronous_commit')).rows).toEqual([{ synchronous_commit: 'off' }]);
      await expect(client.query('SELECT pg_sleep(30)')).rejects.toThrow(/canceling statement due to statement timeout/);
      expect(await f.run(sessionSql.setClaimSession, ['0'], client)).toEqual([{ statement_timeout: '0', ...planned }]);
      // Other sessions keep the server's setting.
      expect((await (await f.client()).query('SHOW synchronous_commit')).rows).toEqual([{ synchronous_commit: 'on' }]);
    });
  });

  describe('setLeaseSession', () => {
    it('sets statement_timeout and JIT off for the whole session, and leaves commits synchronous', async () => {
      const client = await f.client();
      expect(await f.run(sessionSql.setLeaseSession, ['250'], client)).toEqual([
        { statement_timeout: '250ms', jit: 'off' },
      ]);
      await client.query('BEGIN');
      await client.query('COMMIT'); // a session setting, not a transaction's: it outlives the commit
      expect((await client.query('SHOW jit')).rows).toEqual([{ jit: 'off' }]);
      expect((await client.query('SHOW synchronous_commit')).rows).toEqual([{ synchronous_commit: 'on' }]);
      await expect(client.query('SELECT pg_sleep(30)')).rejects.toThrow(/canceling statement due to statement timeout/);
      expect(await f.run(sessionSql.setLeaseSession, ['0'], client)).toEqual([{ statement_timeout: '0', jit: 'off' }]);
    });
  });

  /** The scans of awa.jobs in an `EXPLAIN (FORMAT JSON)` result (its writes left out). */
  const jobsScans = (rows: Array<Record<string, unknown>>): string[] =>
    readsOf(explainedPlan(rows), 'jobs').map(scanLabel);
  /** A scan that reads every waiting job (and sorts them) instead of the claim index in order. */
  const readsEveryJob = (scan: string) => scan === 'Seq Scan' || scan === 'Bitmap Heap Scan';
  /** A session where index reads look dear, as a bloated claim index and statistics of a few waiting jobs made them in a soak. */
  const dearIndexReads = async () => {
    const client = await f.client();
    await client.query('SET random_page_cost = 100');
    await client.query(`SET effective_cache_size = '128kB'`);
    return client;
  };

  describe('setClaimSession: the claim reads the claim index in order', () => {
    /** The scans of awa.jobs in a claim's plan, planned on a session with index reads made to look dear. */
    const claimScans = async (claimSession: boolean): Promise<string[]> => {
      const client = await dearIndexReads();
      if (claimSession) await f.run(sessionSql.setClaimSession, ['0'], client);
      const { rows } = await client.query({
        text: `EXPLAIN (FORMAT JSON) ${claimSql.claimJobs.text}`,
        values: ['default', ['k'], 375, 'instance-a', 0, ...claimSql.fromIndexStart(['k'])],
      });
      return jobsScans(rows);
    };

    it('where a plan reading every waiting job (and sorting them) looks cheaper', async () => {
      await f.sql(
        `INSERT INTO awa.jobs (kind, queue, state) SELECT 'k', 'default', 'available' FROM generate_series(1, 20000)`,
      );
      await f.sql('ANALYZE awa.jobs');
      const elsewhere = await claimScans(false);
      expect(elsewhere.some(readsEveryJob)).toBe(true);
      const claims = await claimScans(true);
      expect(claims).toContain('Index Scan jobs_claim_kind_idx');
      expect(claims.filter(readsEveryJob)).toEqual([]);
    });
  });

  describe('setClaimSession: the claim is planned once per connection', () => {
    const claimParams = (kinds: string[]) =>
      ['default', kinds, 1, 'instance-a', 0, ...claimSql.fromIndexStart(kinds)] as const;
    /** Runs the prepared claim `times` times; returns how often the server planned it afresh and how often it reused its plan. */
    const planCounts = async (claimSession: boolean, times: number) => {
      const client = await f.client();
      if (claimSession) await f.run(sessionSql.setClaimSession, ['0'], client);
      for (let i = 0; i < times; i++) await f.run(claimSql.claimJobs, [...claimParams(['k', 'k2', 'k3'])], client);
      const [counts] = (
        await client.query<{ generic: string; custom: string }>(
          `SELECT generic_plans AS generic, custom_plans AS custom FROM pg_prepared_statements WHERE name = $1`,
          [claimSql.claimJobs.name],
        )
      ).rows;
      return { generic: Number(counts!.generic), custom: Number(counts!.custom) };
    };

    it('reuses one plan on the claim session, where the default planned every claim anew', async () => {
      await f.sql(
        `INSERT INTO awa.jobs (kind, queue, state) SELECT 'k', 'default', 'available' FROM generate_series(1, 50)`,
      );
      await f.sql('ANALYZE awa.jobs');
      // The server's own choice (plan_cache_mode auto): a custom plan for every claim, planning included.
      expect(await planCounts(false, 12)).toEqual({ generic: 0, custom: 12 });
      expect(await planCounts(true, 12)).toEqual({ generic: 12, custom: 0 });
    });

    it("keeps the claim's generic plan on the claim index, read in order", async () => {
      await f.sql(
        `INSERT INTO awa.jobs (kind, queue, state) SELECT 'k', 'default', 'available' FROM generate_series(1, 20000)`,
      );
      await f.sql('ANALYZE awa.jobs');
      const client = await dearIndexReads();
      await f.run(sessionSql.setClaimSession, ['0'], client);
      // EXPLAIN of a bound statement plans it for its values; a prepared one EXECUTEd gets the kept plan.
      await client.query(`PREPARE generic_claim AS ${claimSql.claimJobs.text}`);
      const literal = (v: unknown) =>
        Array.isArray(v) ? `'{${v.join(',')}}'` : typeof v === 'number' ? String(v) : `'${String(v)}'`;
      const { rows } = await client.query(
        `EXPLAIN (FORMAT JSON) EXECUTE generic_claim(${claimParams(['k']).map(literal).join(', ')})`,
      );
      const scans = jobsScans(rows);
      expect(scans).toContain('Index Scan jobs_claim_kind_idx');
      expect(scans.filter(readsEveryJob)).toEqual([]);
    });
  });

  describe('setLocalLimits', () => {
    it('sets the limits given until the transaction ends, and leaves the others as they are', async () => {
      const client = await f.client();
      await client.query('BEGIN');
      expect(await f.run(sessionSql.setLocalLimits, [null, '150', null], client)).toEqual([
        { statement_timeout: '0', lock_timeout: '150ms', idle_in_transaction_session_timeout: '0', jit: 'off' },
      ]);
      await f.sql('CREATE TABLE IF NOT EXISTS limits_probe (id int)');
      const holder = await f.client();
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE limits_probe IN ACCESS EXCLUSIVE MODE');
      await expect(client.query('SELECT * FROM limits_probe')).rejects.toThrow(
        /canceling statement due to lock timeout/,
      );
      await holder.query('ROLLBACK');
      await client.query('ROLLBACK');
      expect((await client.query('SHOW lock_timeout')).rows).toEqual([{ lock_timeout: '0' }]);
    });

    it('has PostgreSQL end a session left idle inside the transaction for longer than its idle timeout', async () => {
      const client = await f.client();
      const pid = (client as unknown as { processID: number }).processID;
      await client.query('BEGIN');
      expect(await f.run(sessionSql.setLocalLimits, ['5000', null, '200'], client)).toEqual([
        { statement_timeout: '5s', lock_timeout: '0', idle_in_transaction_session_timeout: '200ms', jit: 'off' },
      ]);
      await waitFor(
        async () => (await f.sql('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).length === 0,
        15_000,
        'the idle session to be ended',
      );
    });
  });

  describe('deadlockTimeout', () => {
    it("reads the server's deadlock_timeout in ms, as this session has it", async () => {
      const client = await f.client();
      await client.query(`SET deadlock_timeout = '2500ms'`);
      expect(await f.run(sessionSql.deadlockTimeout, [], client)).toEqual([{ ms: 2500 }]);
    });
  });

  it('ran every statement of session.sql', () => {
    expect(
      statementsOf(sessionSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
