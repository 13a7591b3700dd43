import { jobsSql } from '../../lib/sql/index.js';
import type pg from 'pg';
import { execOn, listen, readJob, statementsOf, useSqlFixture } from './sql-fixture.js';
import { insertJobsRows, seedJob, seedRunning, type InsertJobFields } from '../support/job-factory.js';

/** The producer-side statements: insert, read, cancel. */
describe('jobs.sql', () => {
  const f = useSqlFixture();

  const insert = (jobs: InsertJobFields[]) =>
    f.run(jobsSql.insertJobs, [insertJobsRows(jobs)]).then((rows) => rows.map((r) => r.id));
  const job = (kind: string, extra: object = {}) => ({
    kind,
    queue: 'default',
    args: { kind },
    priority: 0,
    max_attempts: 3,
    run_at: null,
    ...extra,
  });

  describe('insertJobsLarge (a large batch, as JSON text of objects)', () => {
    it('returns the ids in input order and stores every field, as insertJobs does', async () => {
      const future = new Date(Date.now() + 3_600_000).toISOString();
      const jobs = [
        job('b', { queue: 'q1', priority: -4, max_attempts: 7, args: { x: [1, 'two'] }, tags: ['t'] }),
        job('a', {
          run_at: future,
          concurrency_key: 'k',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        }),
        job('c', { args: null }),
      ];
      const ids = (await f.run(jobsSql.insertJobsLarge, [JSON.stringify(jobs)])).map((r) => r.id);
      expect(ids.map(BigInt)).toEqual([...ids.map(BigInt)].sort((x, y) => (x < y ? -1 : 1)));
      const rows = await f.sql(
        `SELECT id::text, kind, queue, args, priority, max_attempts, state, tags, concurrency_key, traceparent
           FROM awa.jobs ORDER BY awa.jobs.id`,
      );
      expect(rows).toEqual([
        {
          id: ids[0],
          kind: 'b',
          queue: 'q1',
          args: { x: [1, 'two'] },
          priority: -4,
          max_attempts: 7,
          state: 'available',
          tags: ['t'],
          concurrency_key: null,
          traceparent: null,
        },
        {
          id: ids[1],
          kind: 'a',
          queue: 'default',
          args: { kind: 'a' },
          priority: 0,
          max_attempts: 3,
          state: 'scheduled',
          tags: [],
          concurrency_key: 'k',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        },
        {
          id: ids[2],
          kind: 'c',
          queue: 'default',
          args: null,
          priority: 0,
          max_attempts: 3,
          state: 'available',
          tags: [],
          concurrency_key: null,
          traceparent: null,
        },
      ]);
    });
  });

  describe('insertJobs', () => {
    it('returns the ids in input order', async () => {
      const kinds = ['e', 'a', 'd', 'b', 'c', 'a'];
      const ids = await insert(kinds.map((k) => job(k)));
      expect(ids).toHaveLength(kinds.length);
      const rows = await f.sql('SELECT id::text, kind FROM awa.all_jobs');
      const kindById = new Map(rows.map((r) => [r.id as string, r.kind as string]));
      expect(ids.map((id) => kindById.get(id))).toEqual(kinds);
      expect(ids.map(BigInt)).toEqual([...ids.map(BigInt)].sort((x, y) => (x < y ? -1 : 1)));
    });

    it('stores every field and starts a job available, or scheduled when run_at is in the future', async () => {
      const future = new Date(Date.now() + 3_600_000).toISOString();
      const past = new Date(Date.now() - 3_600_000).toISOString();
      const [now, later, earlier] = await insert([
        job('now', { queue: 'q1', priority: -4, max_attempts: 7, args: { x: [1, 'two'] } }),
        job('later', { run_at: future }),
        job('earlier', { run_at: past }),
      ]);
      const [row] = await f.sql(
        `SELECT kind, queue, args, state, priority, attempt, max_attempts, run_lease::text, errors,
                attempted_at, finalized_at, abs(extract(epoch FROM run_at - created_at)) < 1 AS run_at_is_creation
           FROM awa.all_jobs WHERE id = $1`,
        [now],
      );
      expect(row).toEqual({
        kind: 'now',
        queue: 'q1',
        args: { x: [1, 'two'] },
        state: 'available',
        priority: -4,
        attempt: 0,
        max_attempts: 7,
        run_lease: '0',
        errors: [],
        attempted_at: null,
        finalized_at: null,
        run_at_is_creation: true,
      });
      const states = await f.sql(`SELECT id::text, state, run_at FROM awa.all_jobs WHERE id IN ($1, $2)`, [
        later,
        earlier,
      ]);
      const byId = new Map(states.map((s) => [s.id, s]));
      expect(byId.get(later)).toMatchObject({ state: 'scheduled', run_at: new Date(future) });
      expect(byId.get(earlier)).toMatchObject({ state: 'available', run_at: new Date(past) });
    });

    it('stores null args as JSON null', async () => {
      const [id] = await insert([
        { kind: 'nullargs', queue: 'default', args: null, priority: 0, max_attempts: 1, run_at: null },
      ]);
      const [row] = await f.sql(
        `SELECT args IS NULL AS sql_null, jsonb_typeof(args) AS type FROM awa.all_jobs WHERE id = $1`,
        [id],
      );
      expect(row).toEqual({ sql_null: false, type: 'null' });
    });

    it('NOTIFYs channel awa_jobs once per queue of available jobs, not for scheduled ones', async () => {
      const notes = await listen(await f.client(), 'awa_jobs');
      const future = new Date(Date.now() + 3_600_000).toISOString();
      await insert([
        job('a1', { queue: 'alpha' }),
        job('b1', { queue: 'beta' }),
        job('a2', { queue: 'alpha' }),
        job('g1', { queue: 'gamma', run_at: future }),
        job('a3', { queue: 'alpha' }),
      ]);
      expect((await notes.take(f.sql)).sort()).toEqual(['alpha', 'beta']);
      await insert([job('g2', { queue: 'gamma', run_at: future })]);
      expect(await notes.take(f.sql)).toEqual([]);
    });

    it('NOTIFYs only when the inserting transaction commits', async () => {
      const notes = await listen(await f.client(), 'awa_jobs');
      const tx = await f.client();
      await tx.query('BEGIN');
      await f.run(jobsSql.insertJobs, [insertJobsRows([job('x', { queue: 'txq' })])], tx);
      expect(await notes.take(f.sql)).toEqual([]);
      await tx.query('COMMIT');
      expect(await notes.take(f.sql)).toEqual(['txq']);

      await tx.query('BEGIN');
      await f.run(jobsSql.insertJobs, [insertJobsRows([job('y', { queue: 'rolledback' })])], tx);
      await tx.query('ROLLBACK');
      expect(await notes.take(f.sql)).toEqual([]);
      expect(await f.sql(`SELECT kind FROM awa.all_jobs WHERE queue = 'rolledback'`)).toEqual([]);
    });
  });

  describe('insertJobs tags', () => {
    it('stores the tags of a job, and none when the element has no tags', async () => {
      const [tagged, plain] = await insert([job('tagged', { tags: ['a', 'b c'] }), job('untagged')]);
      const rows = await f.sql('SELECT id::text, tags FROM awa.all_jobs WHERE id IN ($1, $2)', [tagged, plain]);
      expect(new Map(rows.map((r) => [r.id, r.tags]))).toEqual(
        new Map([
          [tagged, ['a', 'b c']],
          [plain, []],
        ]),
      );
    });
  });

  const BLOCKING = ['scheduled', 'available', 'running', 'retryable'];
  const keyed = (kind: string, key: string, extra: object = {}) =>
    job(kind, { unique_key: key, unique_period: null, unique_states: BLOCKING, ...extra });
  const insertUnique = (jobs: object[], on?: pg.ClientBase) =>
    f.run(jobsSql.insertUniqueJobs, [JSON.stringify(jobs.map((j, ord) => ({ ord, ...j })))], on);

  describe('insertUniqueJobs', () => {
    it('inserts unkeyed jobs and the first job of each free key, returning every row in input order', async () => {
      const rows = await insertUnique([
        job('plain0'),
        keyed('k1', 'key-1'),
        job('plain2'),
        keyed('k1-again', 'key-1'),
        keyed('k2', 'key-2', { tags: ['t'] }),
        job('plain5'),
      ]);
      expect(rows.map((r) => [r.ord, r.unique_key, r.id === null])).toEqual([
        [0, null, false],
        [1, 'key-1', false],
        [2, null, false],
        [3, 'key-1', true],
        [4, 'key-2', false],
        [5, null, false],
      ]);
      const stored = await f.sql(`SELECT id::text, kind, unique_key, unique_states, tags FROM awa.all_jobs`);
      const byId = new Map(stored.map((r) => [r.id, r]));
      expect(rows.filter((r) => r.id).map((r) => byId.get(r.id)?.kind)).toEqual([
        'plain0',
        'k1',
        'plain2',
        'k2',
        'plain5',
      ]);
      expect(byId.get(rows[4]!.id)).toMatchObject({ unique_key: 'key-2', unique_states: BLOCKING, tags: ['t'] });
      expect(byId.get(rows[0]!.id)).toMatchObject({ unique_key: null, unique_states: null, tags: [] });
    });

    it('is blocked by a job holding the key in one of its unique_states, not by one in another state', async () => {
      const [held] = await insertUnique([keyed('holder', 'held')]);
      const [finished] = await insertUnique([keyed('holder', 'finished')]);
      await f.sql(`UPDATE awa.jobs SET state = 'completed', finalized_at = now() WHERE id = $1`, [finished!.id]);
      const rows = await insertUnique([keyed('dup', 'held'), keyed('again', 'finished')]);
      expect(rows.map((r) => r.id === null)).toEqual([true, false]);
      expect(held!.id).not.toBeNull();
    });

    it('appends the period bucket of the database clock to the key', async () => {
      const tx = await f.client();
      await tx.query('BEGIN');
      const [row] = await insertUnique([keyed('p', 'periodic', { unique_period: 60_000 })], tx);
      const [clock] = await execOn(tx)(
        `SELECT floor(extract(epoch FROM now()) * 1000 / 60000)::bigint::text AS bucket`,
      );
      await tx.query('COMMIT');
      expect(row!.unique_key).toBe(`periodic:${clock!.bucket}`);
    });
  });

  describe('resolveUniqueJobs', () => {
    const argsAndState = async (id: string) =>
      (await f.sql('SELECT args, state FROM awa.all_jobs WHERE id = $1', [id]))[0];
    const resolve = (items: object[]) =>
      f.run(jobsSql.resolveUniqueJobs, [
        JSON.stringify(items.map((i, ord) => ({ ord, replace: false, args: null, run_at: null, ...i }))),
      ]);

    it('finds the job holding each key, and null where none holds it', async () => {
      const [a] = await insertUnique([keyed('ka', 'res-a', { queue: 'qa' })]);
      const [gone] = await insertUnique([keyed('kg', 'res-gone')]);
      await f.sql(`UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE id = $1`, [gone!.id]);
      expect(await resolve([{ unique_key: 'res-a' }, { unique_key: 'res-gone' }, { unique_key: 'res-a' }])).toEqual([
        { ord: 0, id: a!.id, kind: 'ka', queue: 'qa', replaced: false },
        { ord: 1, id: null, kind: null, queue: null, replaced: false },
        { ord: 2, id: a!.id, kind: 'ka', queue: 'qa', replaced: false },
      ]);
    });

    it('replaces a waiting holder with the last replacing element, and NOTIFYs its queue when available', async () => {
      const notes = await listen(await f.client(), 'awa_jobs');
      const future = new Date(Date.now() + 3_600_000).toISOString();
      const [h] = await insertUnique([keyed('kr', 'res-replace', { queue: 'rq', run_at: future })]);
      await notes.take(f.sql);
      const rows = await resolve([
        { unique_key: 'res-replace', replace: true, args: { v: 1 } },
        { unique_key: 'res-replace', replace: false },
        { unique_key: 'res-replace', replace: true, args: { v: 2 } },
      ]);
      expect(rows.map((r) => [r.id, r.replaced])).toEqual([
        [h!.id, true],
        [h!.id, false],
        [h!.id, true],
      ]);
      expect(await argsAndState(h!.id!)).toMatchObject({ args: { v: 2 }, state: 'available' });
      expect(await notes.take(f.sql)).toEqual(['rq']);
      await resolve([{ unique_key: 'res-replace', replace: true, args: { v: 3 }, run_at: future }]);
      expect(await argsAndState(h!.id!)).toMatchObject({ args: { v: 3 }, state: 'scheduled' });
      expect(await notes.take(f.sql)).toEqual([]);
    });

    it('does not replace a running holder', async () => {
      const [h] = await insertUnique([keyed('krun', 'res-running', { args: { v: 1 } })]);
      await f.sql(`UPDATE awa.jobs SET state = 'running', attempt = 1 WHERE id = $1`, [h!.id]);
      const rows = await resolve([{ unique_key: 'res-running', replace: true, args: { v: 2 } }]);
      expect(rows).toMatchObject([{ id: h!.id, replaced: false }]);
      expect(await argsAndState(h!.id!)).toMatchObject({ args: { v: 1 }, state: 'running' });
    });
  });

  describe('getJob', () => {
    it('reads every column, with bigint ids and leases as strings', async () => {
      const id = await seedJob(f.sql, {
        kind: 'read',
        queue: 'q',
        state: 'retryable',
        priority: 3,
        attempt: 2,
        maxAttempts: 9,
        runLease: 5,
        args: { a: 1 },
      });
      await f.sql(
        `UPDATE awa.jobs SET errors = '[{"at": "2020-01-01T00:00:00Z", "attempt": 2, "error": "boom"}]' WHERE id = $1`,
        [id],
      );
      const [row] = await f.run(jobsSql.getJob, [id]);
      if (!row) throw new Error(`job ${id} not found`);
      expect(row).toMatchObject({
        id,
        kind: 'read',
        queue: 'q',
        args: { a: 1 },
        state: 'retryable',
        priority: 3,
        attempt: 2,
        max_attempts: 9,
        errors: [{ at: '2020-01-01T00:00:00Z', attempt: 2, error: 'boom' }],
        run_lease: '5',
        attempted_at: null,
        finalized_at: null,
      });
      expect(row.run_at).toBeInstanceOf(Date);
      expect(row.created_at).toBeInstanceOf(Date);
      expect(Object.keys(row).sort()).toEqual([
        'args',
        'attempt',
        'attempted_at',
        'created_at',
        'errors',
        'finalized_at',
        'id',
        'kind',
        'max_attempts',
        'output',
        'priority',
        'progress',
        'queue',
        'run_at',
        'run_lease',
        'snoozes',
        'state',
        'tags',
        'unique_key',
        'workflow_id',
      ]);
    });

    it('returns nothing for an unknown id, and handles ids beyond 2^53', async () => {
      expect(await f.run(jobsSql.getJob, ['424242'])).toEqual([]);
      await f.sql(`INSERT INTO awa.jobs (id, kind) VALUES (9007199254740993, 'big')`);
      const [row] = await f.run(jobsSql.getJob, ['9007199254740993']);
      expect(row).toMatchObject({ id: '9007199254740993', kind: 'big' });
    });
  });

  describe('cancelWaitingJob', () => {
    it.each(['scheduled', 'available', 'retryable'])(
      'cancels a %s job and returns its previous state',
      async (state) => {
        const id = await seedJob(f.sql, { state, attempt: 1 });
        expect(await f.run(jobsSql.cancelWaitingJob, [id, 'cancelled by test'])).toEqual([
          { previous_state: state, queue: 'default', kind: 'k' },
        ]);
        const row = await readJob(f.sql, id);
        expect(row).toMatchObject({
          state: 'cancelled',
          attempt: 1,
          errors: [{ attempt: 1, error: 'cancelled by test' }],
        });
        expect(row!.finalized_at).toBeInstanceOf(Date);
      },
    );

    it.each(['running', 'completed', 'failed', 'cancelled'])(
      'leaves a %s job alone and returns nothing',
      async (state) => {
        const id = await seedJob(f.sql, { state, attempt: 1 });
        const before = await readJob(f.sql, id);
        expect(await f.run(jobsSql.cancelWaitingJob, [id, 'cancelled by test'])).toEqual([]);
        const after = await readJob(f.sql, id);
        expect({ ...after, run_at_in_ms: 0 }).toEqual({ ...before, run_at_in_ms: 0 });
      },
    );

    it('returns nothing for an unknown id', async () => {
      expect(await f.run(jobsSql.cancelWaitingJob, ['777', 'cancelled by test'])).toEqual([]);
    });
  });

  describe('requestCancel', () => {
    it('stores the request on the lease of a running job and NOTIFYs awa_cancel with its id', async () => {
      const notes = await listen(await f.client(), 'awa_cancel');
      const { id } = await seedRunning(f.sql);
      const other = await seedRunning(f.sql);
      expect(await f.run(jobsSql.requestCancel, [id])).toMatchObject([{ state: 'running', signalled: true }]);
      expect(await notes.take(f.sql)).toEqual([id]);
      // The job row is left to the transition that ends the attempt: it reads the request there.
      expect(await readJob(f.sql, id)).toMatchObject({ state: 'running', errors: [] });
      expect(await f.sql('SELECT job_id::text, cancel_requested FROM awa.active_leases ORDER BY job_id')).toEqual([
        { job_id: id, cancel_requested: true },
        { job_id: other.id, cancel_requested: false },
      ]);
    });

    it(
      'returns the state of any other job, unflagged and without a ' + 'notification, and nothing for an unknown id',
      async () => {
        const notes = await listen(await f.client(), 'awa_cancel');
        for (const state of ['scheduled', 'available', 'retryable', 'completed', 'failed', 'cancelled']) {
          const id = await seedJob(f.sql, { state });
          expect(await f.run(jobsSql.requestCancel, [id])).toMatchObject([{ state, signalled: false }]);
        }
        expect(await f.run(jobsSql.requestCancel, ['999999'])).toEqual([]);
        expect(await notes.take(f.sql)).toEqual([]);
      },
    );
  });

  it('ran every statement of jobs.sql', () => {
    expect(
      statementsOf(jobsSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
