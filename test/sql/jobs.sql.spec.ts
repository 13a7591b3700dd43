import { jobsSql } from '../../lib/sql/index.js';
import { listen, readJob, statementsOf, useSqlFixture } from './sql-fixture.js';
import { seedJob, seedRunning } from '../support/job-factory.js';

/** The producer-side statements: insert, read, cancel. */
describe('jobs.sql', () => {
  const f = useSqlFixture();

  const insert = (jobs: object[]) =>
    f.run(jobsSql.insertJobs, [JSON.stringify(jobs)]).then((rows) => rows.map((r) => r.id));
  const job = (kind: string, extra: object = {}) => ({
    kind,
    queue: 'default',
    args: { kind },
    priority: 0,
    max_attempts: 3,
    run_at: null,
    ...extra,
  });

  describe('insertJobs', () => {
    it('returns the ids in input order', async () => {
      const kinds = ['e', 'a', 'd', 'b', 'c', 'a'];
      const ids = await insert(kinds.map((k) => job(k)));
      expect(ids).toHaveLength(kinds.length);
      const rows = await f.sql('SELECT id::text, kind FROM awa.jobs');
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
           FROM awa.jobs WHERE id = $1`,
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
      const states = await f.sql(`SELECT id::text, state, run_at FROM awa.jobs WHERE id IN ($1, $2)`, [later, earlier]);
      const byId = new Map(states.map((s) => [s.id, s]));
      expect(byId.get(later)).toMatchObject({ state: 'scheduled', run_at: new Date(future) });
      expect(byId.get(earlier)).toMatchObject({ state: 'available', run_at: new Date(past) });
    });

    it('stores null args as JSON null', async () => {
      const [id] = await insert([
        { kind: 'nullargs', queue: 'default', args: null, priority: 0, max_attempts: 1, run_at: null },
      ]);
      const [row] = await f.sql(
        `SELECT args IS NULL AS sql_null, jsonb_typeof(args) AS type FROM awa.jobs WHERE id = $1`,
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
      await f.run(jobsSql.insertJobs, [JSON.stringify([job('x', { queue: 'txq' })])], tx);
      expect(await notes.take(f.sql)).toEqual([]);
      await tx.query('COMMIT');
      expect(await notes.take(f.sql)).toEqual(['txq']);

      await tx.query('BEGIN');
      await f.run(jobsSql.insertJobs, [JSON.stringify([job('y', { queue: 'rolledback' })])], tx);
      await tx.query('ROLLBACK');
      expect(await notes.take(f.sql)).toEqual([]);
      expect(await f.sql(`SELECT kind FROM awa.jobs WHERE queue = 'rolledback'`)).toEqual([]);
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
