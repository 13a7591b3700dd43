import type pg from 'pg';
import { JOB_STATES } from '../../lib/interfaces/job.interface.js';
import { MAX_MISSED_FIRES, MISSED_GRACE_MS } from '../../lib/schedules/fire-times.js';
import { runScheduleTick, scheduleJob, type TickExec } from '../../lib/schedules/schedule-tick.js';
import { schedulesSql, type SqlStatement } from '../../lib/sql/index.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';

const STATES = [...JOB_STATES];

/** awa.schedules and the statements of periodic jobs. */
describe('schedules.sql', () => {
  const f = useSqlFixture();
  beforeEach(async () => {
    await f.sql('TRUNCATE awa.schedules');
  });

  /** A schedule row, as boot or upsertSchedule stores it. */
  const schedule = (name: string, next: string | null, extra: Record<string, unknown> = {}) => ({
    name,
    kind: 'report',
    queue: 'default',
    args: { n: 1 },
    cron: '* * * * * *',
    time_zone: null,
    missed: 'once',
    next_fire_at: next,
    ...extra,
  });
  const upsert = (rows: object[], source = 'runtime') =>
    f.run(schedulesSql.upsertSchedules, [JSON.stringify(rows), source]);
  const row = async (name: string) => (await f.run(schedulesSql.getSchedule, [name]))[0];
  const execOn =
    (client: pg.ClientBase): TickExec =>
    (statement, values) =>
      f.run(statement as unknown as SqlStatement<unknown[], never>, values, client);

  it('databaseNow reads the database clock', async () => {
    const [{ now }] = (await f.run(schedulesSql.databaseNow)) as [{ now: Date }];
    const [{ db }] = (await f.sql('SELECT now() AS db')) as [{ db: Date }];
    expect(now).toBeInstanceOf(Date);
    expect(now.getTime()).toBeLessThanOrEqual(db.getTime());
  });

  describe('upsertSchedules', () => {
    it('inserts new schedules with their source, unpaused and never fired', async () => {
      expect(await upsert([schedule('a', '2030-01-01T00:00:00Z')], 'options')).toEqual([{ name: 'a' }]);
      expect(await row('a')).toMatchObject({
        name: 'a',
        kind: 'report',
        args: { n: 1 },
        source: 'options',
        paused: false,
        next_fire_at: new Date('2030-01-01T00:00:00Z'),
        last_fire_at: null,
      });
    });

    it('keeps the next fire when cron and time zone are unchanged, restarts it when either changes', async () => {
      await upsert([schedule('a', '2030-01-01T00:00:00Z'), schedule('b', '2030-01-01T00:00:00Z')]);
      await upsert([
        schedule('a', '2031-01-01T00:00:00Z', { args: { n: 2 } }),
        schedule('b', '2031-01-01T00:00:00Z', { time_zone: 'Europe/Berlin' }),
      ]);
      expect(await row('a')).toMatchObject({ args: { n: 2 }, next_fire_at: new Date('2030-01-01T00:00:00Z') });
      expect(await row('b')).toMatchObject({
        time_zone: 'Europe/Berlin',
        next_fire_at: new Date('2031-01-01T00:00:00Z'),
      });
      await upsert([schedule('a', '2032-01-01T00:00:00Z', { cron: '0 * * * * *' })]);
      expect((await row('a'))!.next_fire_at).toEqual(new Date('2032-01-01T00:00:00Z'));
    });

    it('keeps a schedule paused across an upsert', async () => {
      await upsert([schedule('a', '2030-01-01T00:00:00Z')]);
      await f.run(schedulesSql.pauseSchedule, ['a']);
      await upsert([schedule('a', '2030-01-01T00:00:00Z')], 'decorator');
      expect(await row('a')).toMatchObject({ paused: true, source: 'decorator' });
    });
  });

  describe('pruneDeclaredSchedules', () => {
    const STALE_AFTER = 60_000;
    const prune = (declared: string[], kinds: string[]) =>
      f.run(schedulesSql.pruneDeclaredSchedules, ['self', declared, kinds, STALE_AFTER]);
    const names = async () => (await f.run(schedulesSql.listSchedules)).map((s) => s.name);
    /** Another instance's row: it declares `schedules` and handles `kinds`; `beatAgoMs` since its heartbeat. */
    const instance = (id: string, schedules: string[], kinds: string[], beatAgoMs = 0, settings = '{}') =>
      f.sql(
        `INSERT INTO awa.instances (id, hostname, pid, queues, lock_key, settings, started_at, heartbeat_at,
                                    handlers, schedules)
         VALUES ($1, 'host', 1, '{default}', 1, $5::jsonb, now(), now() - $4::float8 * interval '1 millisecond',
                 $3::jsonb, $2::text[])`,
        [id, schedules, JSON.stringify(Object.fromEntries(kinds.map((k) => [k, 'default']))), beatAgoMs, settings],
      );
    beforeEach(async () => {
      await f.sql('DELETE FROM awa.instances');
    });

    it('removes undeclared code schedules of handled kinds, never runtime ones', async () => {
      await upsert(
        [schedule('kept', null), schedule('gone', null), schedule('other', null, { kind: 'x' })],
        'decorator',
      );
      await upsert([schedule('runtime', null)], 'runtime');
      expect(await prune(['kept'], ['report'])).toEqual([{ name: 'gone' }]);
      expect(await names()).toEqual(['kept', 'other', 'runtime']);
    });

    it('keeps a schedule that another live instance declares, and removes it once that instance is stale', async () => {
      await upsert([schedule('old', null), schedule('new', null)], 'options');
      await instance('v1', ['old'], ['report']);
      expect(await prune(['new'], ['report'])).toEqual([]);
      // The other instance's heartbeat is older than its own heartbeatStaleAfter: it no longer counts.
      await f.sql(`DELETE FROM awa.instances`);
      await instance('v1', ['old'], ['report'], 10_000, '{"heartbeatStaleAfter": 5000}');
      expect(await prune(['new'], ['report'])).toEqual([{ name: 'old' }]);
    });

    it("prunes for another live instance's kinds, and keeps what no live instance handles", async () => {
      await upsert([schedule('theirs', null), schedule('orphan', null, { kind: 'nobody' })], 'decorator');
      await instance('b', [], ['report']);
      await instance('gone', [], ['nobody'], 120_000);
      expect(await prune([], [])).toEqual([{ name: 'theirs' }]);
      expect(await names()).toEqual(['orphan']);
    });
  });

  it('pause, resume (from a new next fire), delete, and nothing for an unknown name', async () => {
    await upsert([schedule('a', '2030-01-01T00:00:00Z')]);
    expect(await f.run(schedulesSql.pauseSchedule, ['a'])).toEqual([{ name: 'a' }]);
    expect(await f.run(schedulesSql.pauseSchedule, ['nope'])).toEqual([]);
    expect((await row('a'))!.paused).toBe(true);
    const next = new Date('2035-01-01T00:00:00Z');
    expect(await f.run(schedulesSql.resumeSchedule, ['a', next])).toEqual([{ name: 'a' }]);
    expect(await row('a')).toMatchObject({ paused: false, next_fire_at: next });
    // Resuming a running schedule keeps its timeline.
    await f.run(schedulesSql.resumeSchedule, ['a', new Date('2040-01-01T00:00:00Z')]);
    expect((await row('a'))!.next_fire_at).toEqual(next);
    expect(await f.run(schedulesSql.deleteSchedule, ['a'])).toEqual([{ name: 'a' }]);
    expect(await f.run(schedulesSql.deleteSchedule, ['a'])).toEqual([]);
  });

  it('lockDueSchedules returns due, unpaused schedules oldest first, skipping those another tick holds', async () => {
    await upsert([
      schedule('late', new Date(Date.now() - 3_600_000).toISOString()),
      schedule('due', new Date(Date.now() - 60_000).toISOString()),
      schedule('future', '2099-01-01T00:00:00Z'),
      schedule('paused', new Date(Date.now() - 60_000).toISOString()),
    ]);
    await f.run(schedulesSql.pauseSchedule, ['paused']);
    const a = await f.client();
    const b = await f.client();
    await a.query('BEGIN');
    await b.query('BEGIN');
    try {
      const first = await f.run(schedulesSql.lockDueSchedules, [1, null], a);
      expect(first.map((s) => s.name)).toEqual(['late']);
      expect(first[0]!.db_now).toBeInstanceOf(Date);
      expect((await f.run(schedulesSql.lockDueSchedules, [10, null], b)).map((s) => s.name)).toEqual(['due']);
    } finally {
      await a.query('ROLLBACK');
      await b.query('ROLLBACK');
    }
  });

  it('lockDueSchedules as of a given time returns the schedules due then, with that time', async () => {
    await upsert([schedule('soon', '2099-01-01T00:00:00Z'), schedule('later', '2099-06-01T00:00:00Z')]);
    const at = new Date('2099-02-01T00:00:00Z');
    const due = await f.run(schedulesSql.lockDueSchedules, [10, at]);
    expect(due.map((s) => [s.name, s.db_now])).toEqual([['soon', at]]);
  });

  describe('insertScheduledJobs', () => {
    const job = (key: string | null) =>
      scheduleJob(
        { name: 's', kind: 'report', queue: 'default', args: { n: 1 }, concurrency_key: null },
        3,
        new Date(),
        key,
      );

    it('inserts an available job with the schedule tag, its key and every state as unique states', async () => {
      const [inserted] = await f.run(schedulesSql.insertScheduledJobs, [JSON.stringify([job('k1')]), STATES]);
      const [stored] = await f.sql('SELECT * FROM awa.all_jobs WHERE id = $1', [inserted!.id]);
      expect(stored).toMatchObject({
        kind: 'report',
        state: 'available',
        max_attempts: 3,
        args: { n: 1 },
        tags: ['awa:schedule:s'],
        unique_key: 'k1',
        unique_states: STATES,
      });
    });

    it('never inserts a key twice, even after its job finished; keyless jobs always go in', async () => {
      await f.run(schedulesSql.insertScheduledJobs, [JSON.stringify([job('k1')]), STATES]);
      await f.sql(`UPDATE awa.jobs SET state = 'completed', finalized_at = now()`);
      expect(
        await f.run(schedulesSql.insertScheduledJobs, [JSON.stringify([job('k1'), job('k2')]), STATES]),
      ).toHaveLength(1);
      expect(await f.run(schedulesSql.insertScheduledJobs, [JSON.stringify([job(null), job(null)]), []])).toHaveLength(
        2,
      );
      const rows = await f.sql('SELECT unique_key, unique_states FROM awa.all_jobs ORDER BY id');
      expect(rows).toEqual([
        { unique_key: 'k1', unique_states: STATES },
        { unique_key: 'k2', unique_states: STATES },
        { unique_key: null, unique_states: null },
        { unique_key: null, unique_states: null },
      ]);
    });

    it('two connections inserting the same fire at once store it once (the second waits, then skips)', async () => {
      const a = await f.client();
      const b = await f.client();
      await a.query('BEGIN');
      await b.query('BEGIN');
      expect(await f.run(schedulesSql.insertScheduledJobs, [JSON.stringify([job('k')]), STATES], a)).toHaveLength(1);
      const second = f.run(schedulesSql.insertScheduledJobs, [JSON.stringify([job('k')]), STATES], b);
      await a.query('COMMIT');
      expect(await second).toEqual([]);
      await b.query('COMMIT');
      expect(await f.sql(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE unique_key = 'k'`)).toEqual([{ n: 1 }]);
    });
  });

  it('advanceSchedules moves next and last fire on, only from the expected next fire', async () => {
    await upsert([schedule('a', '2030-01-01T00:00:00Z'), schedule('b', '2030-01-01T00:00:00Z')]);
    const advance = (name: string, expected: string, last: string | null) => ({
      name,
      expected,
      next_fire_at: '2030-01-01T00:00:05Z',
      last_fire_at: last,
    });
    const moved = await f.run(schedulesSql.advanceSchedules, [
      JSON.stringify([
        advance('a', '2030-01-01T00:00:00Z', '2030-01-01T00:00:04Z'),
        advance('b', '2029-01-01T00:00:00Z', null),
      ]),
    ]);
    expect(moved).toEqual([{ name: 'a' }]);
    expect(await row('a')).toMatchObject({
      next_fire_at: new Date('2030-01-01T00:00:05Z'),
      last_fire_at: new Date('2030-01-01T00:00:04Z'),
    });
    expect((await row('b'))!.next_fire_at).toEqual(new Date('2030-01-01T00:00:00Z'));
  });

  it('two overlapping ticks on two connections enqueue every fire once', async () => {
    const start = new Date(Math.floor(Date.now() / 1000) * 1000 - 20_000).toISOString();
    await upsert([schedule('a', start), schedule('b', start, { cron: '*/2 * * * * *' })]);
    const tick = async (client: pg.Client) => {
      await client.query('BEGIN');
      const result = await runScheduleTick(execOn(client), 100, () => 5);
      await client.query('COMMIT');
      return result;
    };
    const clients = await Promise.all([f.client(), f.client(), f.client()]);
    const results = await Promise.all(clients.map(tick));
    expect(results.reduce((n, r) => n + r.schedules, 0)).toBe(2);
    const keys = (await f.sql('SELECT unique_key FROM awa.all_jobs')).map((r) => r.unique_key as string);
    expect(new Set(keys).size).toBe(keys.length);
    // Every second from start for 'a' (21 or more), every even second for 'b'.
    const of = (name: string) => keys.filter((k) => k.startsWith(`awa:schedule:${name}:`)).sort();
    expect(of('a')[0]).toBe(`awa:schedule:a:${start}`);
    expect(of('a').length).toBeGreaterThanOrEqual(21);
    expect(of('b')[0]).toBe(`awa:schedule:b:${start}`);
    // A second round finds nothing due any more (or only the fires of the last moments), never a repeat.
    await Promise.all(clients.map(tick));
    const again = (await f.sql('SELECT unique_key FROM awa.all_jobs')).map((r) => r.unique_key as string);
    expect(new Set(again).size).toBe(again.length);
  });

  it.each([
    ['skip', 0],
    ['once', 1],
    ['all', MAX_MISSED_FIRES],
  ] as const)("a tick after a long downtime enqueues %s's share of the missed fires", async (missed, count) => {
    const since = new Date(Math.floor(Date.now() / 86_400_000 - 200) * 86_400_000).toISOString();
    await upsert([schedule('daily', since, { cron: '0 0 * * *', missed })]);
    const client = await f.client();
    await client.query('BEGIN');
    await runScheduleTick(execOn(client), 10, () => 5);
    await client.query('COMMIT');
    const [{ n }] = await f.sql(
      `SELECT count(*)::int AS n FROM awa.all_jobs WHERE run_at < now() - ${MISSED_GRACE_MS} * interval '1 millisecond'`,
    );
    expect(n).toBe(count);
    const stored = (await row('daily'))!;
    expect(stored.next_fire_at!.getTime()).toBeGreaterThan(Date.now() - MISSED_GRACE_MS);
  });

  it('finds due schedules with an index scan on schedules_due_idx', async () => {
    const client = await f.client();
    await client.query('SET enable_seqscan = off');
    const [plan] = (
      await client.query(
        `EXPLAIN (FORMAT JSON) ${schedulesSql.lockDueSchedules.text.replace('$1', '10').replaceAll('$2', 'NULL')}`,
      )
    ).rows[0]['QUERY PLAN'];
    expect(JSON.stringify(plan)).toContain('"Index Name":"schedules_due_idx"');
  });

  it('runs every statement of schedules.sql', () => {
    expect(
      statementsOf(schedulesSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
