import { RescueErrors } from '../../lib/awa.messages.js';
import { jobsSql, workerSql } from '../../lib/sql/index.js';
import { SHUTDOWN_RELEASE_LIMIT } from '../../lib/sql/worker.sql.js';
import type pg from 'pg';
import type { SqlStatement } from '../../lib/sql/sql-statement.js';
import {
  claimer,
  execOn,
  leaseCount,
  leasesOf,
  listen,
  readJob,
  sortedIds,
  statementsOf,
  useSqlFixture,
} from './sql-fixture.js';
import { seedJob, seedLease, seedRunning } from '../support/job-factory.js';
import { planNodes, scanLabel, type PlanNode } from '../support/query-plan.js';

/** The worker's fenced writes of an attempt's outcome (the claim is claim.sql.spec.ts's). */
describe('worker.sql', () => {
  const f = useSqlFixture();

  const claim = claimer(f);

  // Both completions do the same to jobs in no workflow (the second leaves out the workflow step).
  describe.each([
    ['completeJobs', workerSql.completeJobs],
    ['completeJobsOutsideWorkflows', workerSql.completeJobsOutsideWorkflows],
  ] as const)('%s', (_, completeJobs) => {
    it('completes running attempts, deletes their leases and returns none (it returns those it missed)', async () => {
      const a = await seedRunning(f.sql);
      const b = await seedRunning(f.sql, { attempt: 3 });
      const rows = await f.run(completeJobs, [
        [a.id, b.id],
        [a.runLease, b.runLease],
      ]);
      expect(rows).toEqual([]);
      for (const { id } of [a, b]) {
        const job = await readJob(f.sql, id);
        expect(job).toMatchObject({ state: 'completed', errors: [] });
        expect(job!.finalized_at).toBeInstanceOf(Date);
        expect(await leasesOf(f.sql, id)).toEqual([]);
      }
    });

    it('is fenced: a wrong run_lease or a lease already gone changes nothing and is returned as missed', async () => {
      const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2 });
      const gone = await seedRunning(f.sql);
      await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]); // rescued meanwhile
      const ok = await seedRunning(f.sql);
      const rows = await f.run(completeJobs, [
        [wrong.id, gone.id, ok.id],
        ['1', gone.runLease, ok.runLease],
      ]);
      expect(rows.sort((x, y) => Number(x.id) - Number(y.id))).toEqual([
        { id: wrong.id, run_lease: '1' },
        { id: gone.id, run_lease: gone.runLease },
      ]);
      expect(await readJob(f.sql, ok.id)).toMatchObject({ state: 'completed' });
      expect(await readJob(f.sql, wrong.id)).toMatchObject({ state: 'running', finalized_at: null });
      expect(await leasesOf(f.sql, wrong.id)).toEqual(['2@instance-a']);
      expect(await readJob(f.sql, gone.id)).toMatchObject({ state: 'running', finalized_at: null });
    });

    it('does not complete a job that was rescued and claimed again', async () => {
      const { id } = await seedRunning(f.sql);
      // Rescue moved it on, and a new attempt (lease 2) holds it now.
      await f.sql(`DELETE FROM awa.active_leases WHERE job_id = $1`, [id]);
      await f.sql(`UPDATE awa.jobs SET attempt = 2, run_lease = 2 WHERE id = $1`, [id]);
      await seedLease(f.sql, id, 2, { instanceId: 'instance-b' });
      expect(await f.run(completeJobs, [[id], ['1']])).toEqual([{ id, run_lease: '1' }]);
      expect(await readJob(f.sql, id)).toMatchObject({ state: 'running', attempt: 2, run_lease: '2' });
      expect(await leasesOf(f.sql, id)).toEqual(['2@instance-b']);
    });
  });

  describe('failJobs', () => {
    const fail = (jobs: Array<{ id: string; runLease: string; error: string; base: number; cap: number }>) =>
      f.run(workerSql.failJobs, [
        jobs.map((j) => j.id),
        jobs.map((j) => j.runLease),
        jobs.map((j) => j.error),
        jobs.map((j) => j.base),
        jobs.map((j) => j.cap),
      ]);

    it(
      'makes an attempt retryable with run_at = now() + base * ' +
        '2^(attempt-1) plus up to 25% jitter, and appends the error',
      async () => {
        const first = await seedRunning(f.sql, { attempt: 1, maxAttempts: 5 });
        const third = await seedRunning(f.sql, { attempt: 3, maxAttempts: 5 });
        const rows = await fail([
          { ...first, error: 'boom 1', base: 1_000, cap: 1_000_000 },
          { ...third, error: 'boom 3', base: 2_000, cap: 1_000_000 },
        ]);
        expect(rows.sort((x, y) => Number(x.id) - Number(y.id))).toMatchObject([
          { id: first.id, state: 'retryable' },
          { id: third.id, state: 'retryable' },
        ]);
        const one = await readJob(f.sql, first.id);
        expect(one).toMatchObject({
          state: 'retryable',
          attempt: 1,
          finalized_at: null,
          errors: [{ attempt: 1, error: 'boom 1', at: expect.any(String) }],
        });
        expect(one!.retry_delay_ms).toBeGreaterThanOrEqual(1_000);
        expect(one!.retry_delay_ms).toBeLessThanOrEqual(1_250);
        expect(one!.run_at_in_ms).toBeGreaterThan(0);
        const three = await readJob(f.sql, third.id);
        expect(three).toMatchObject({ state: 'retryable', errors: [{ attempt: 3, error: 'boom 3' }] });
        expect(three!.retry_delay_ms).toBeGreaterThanOrEqual(8_000);
        expect(three!.retry_delay_ms).toBeLessThanOrEqual(10_000);
        expect(await leaseCount(f)).toBe(0);
      },
    );

    it('caps the delay at the retry cap', async () => {
      const job = await seedRunning(f.sql, { attempt: 12, maxAttempts: 20 });
      await fail([{ ...job, error: 'x', base: 1_000, cap: 5_000 }]);
      expect((await readJob(f.sql, job.id))!.retry_delay_ms).toBeCloseTo(5_000, 3);
    });

    it(
      'fails the job for good once attempt >= max_attempts, keeping ' + 'run_at, and appends to earlier errors',
      async () => {
        const job = await seedRunning(f.sql, { attempt: 3, maxAttempts: 3, runAtMs: -60_000 });
        await f.sql(
          `UPDATE awa.jobs SET errors = ` +
            `'[{"at": "2020-01-01T00:00:00Z", "attempt": 2, "error": "earlier"}]' ` +
            `WHERE id = $1`,
          [job.id],
        );
        const before = await readJob(f.sql, job.id);
        expect(await fail([{ ...job, error: 'last straw', base: 1_000, cap: 1_000 }])).toMatchObject([
          { id: job.id, state: 'failed' },
        ]);
        const after = await readJob(f.sql, job.id);
        expect(after).toMatchObject({
          state: 'failed',
          attempt: 3,
          errors: [
            { attempt: 2, error: 'earlier' },
            { attempt: 3, error: 'last straw' },
          ],
        });
        expect(after!.finalized_at).toBeInstanceOf(Date);
        // run_at is where it was: about a minute ago, relative to a now() that moved on a little.
        expect(after!.run_at_in_ms).toBeLessThanOrEqual(before!.run_at_in_ms);
        expect(after!.run_at_in_ms).toBeLessThan(-59_000);
      },
    );

    it('is fenced: a wrong run_lease or a lease already gone changes nothing and is returned as missed', async () => {
      const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2 });
      const gone = await seedRunning(f.sql);
      await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]);
      const rows = await fail([
        { id: wrong.id, runLease: '1', error: 'x', base: 1, cap: 1 },
        { ...gone, error: 'x', base: 1, cap: 1 },
      ]);
      expect(rows).toEqual([]);
      expect(await readJob(f.sql, wrong.id)).toMatchObject({ state: 'running', errors: [] });
      expect(await leasesOf(f.sql, wrong.id)).toEqual(['2@instance-a']);
      expect(await readJob(f.sql, gone.id)).toMatchObject({ state: 'running', errors: [] });
    });
  });

  describe('releaseJobs', () => {
    /** started, retry base ms, retry cap ms of `n` attempts. */
    const release = (n: number, started = true): [boolean[], number[], number[]] => [
      Array(n).fill(started),
      Array(n).fill(1_000),
      Array(n).fill(2_000),
    ];
    const releaseOne = (job: { id: string; runLease: string }, started: boolean, reason = 'released on shutdown') =>
      f.run(workerSql.releaseJobs, [[job.id], [job.runLease], reason, ...release(1, started)]);

    it(
      'gives the attempt back: available now, attempt decremented, the ' +
        'error appended, lease gone, queue notified once',
      async () => {
        const notes = await listen(await f.client(), 'awa_jobs');
        const a = await seedRunning(f.sql, { queue: 'alpha', attempt: 2, runLease: 5, runAtMs: -60_000 });
        const b = await seedRunning(f.sql, { queue: 'alpha', attempt: 1 });
        const c = await seedRunning(f.sql, { queue: 'beta', attempt: 1 });
        const rows = await f.run(workerSql.releaseJobs, [
          [a.id, b.id, c.id],
          [a.runLease, b.runLease, c.runLease],
          'released on shutdown',
          ...release(3),
        ]);
        expect(sortedIds(rows)).toEqual([a.id, b.id, c.id].sort());
        expect((await notes.take(f.sql)).sort()).toEqual(['alpha', 'beta']);
        const job = await readJob(f.sql, a.id);
        expect(job).toMatchObject({
          state: 'available',
          attempt: 1,
          run_lease: '5',
          finalized_at: null,
          errors: [{ attempt: 2, error: 'released on shutdown' }],
        });
        expect(job!.retry_delay_ms).toBe(0); // run_at = now() of the release
        expect(await readJob(f.sql, b.id)).toMatchObject({ state: 'available', attempt: 0 });
        expect(await leaseCount(f)).toBe(0);
      },
    );

    it('is fenced: a wrong run_lease or a lease already gone changes nothing, and nothing is notified', async () => {
      const notes = await listen(await f.client(), 'awa_jobs');
      const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2 });
      const gone = await seedRunning(f.sql);
      await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]);
      expect(
        await f.run(workerSql.releaseJobs, [
          [wrong.id, gone.id],
          ['1', gone.runLease],
          'released on shutdown',
          ...release(2),
        ]),
      ).toEqual([]);
      expect(await notes.take(f.sql)).toEqual([]);
      expect(await readJob(f.sql, wrong.id)).toMatchObject({ state: 'running', attempt: 2, errors: [] });
      expect(await leasesOf(f.sql, wrong.id)).toEqual(['2@instance-a']);
      expect(await readJob(f.sql, gone.id)).toMatchObject({ state: 'running', attempt: 1, errors: [] });
    });

    it(
      `spends the attempt on shutdown release ${SHUTDOWN_RELEASE_LIMIT} in a row ` +
        `of a started attempt, and counts no unstarted one`,
      async () => {
        const id = await seedJob(f.sql, { maxAttempts: 5 });
        const states: string[] = [];
        for (let i = 1; i <= SHUTDOWN_RELEASE_LIMIT; i++) {
          // Claimed again (as a claim would), then given back once unstarted and once after running.
          for (const started of [false, true]) {
            const runLease = String(2 * i + (started ? 1 : 0));
            await f.sql(`UPDATE awa.jobs SET state = 'running', attempt = attempt + 1, run_lease = $2 WHERE id = $1`, [
              id,
              runLease,
            ]);
            await seedLease(f.sql, id, runLease);
            const [row] = await releaseOne({ id, runLease }, started, started ? 'released on shutdown' : 'unstarted');
            if (started) states.push(row!.state);
          }
        }
        expect(states).toEqual([...Array(SHUTDOWN_RELEASE_LIMIT - 1).fill('available'), 'retryable']);
        const job = await readJob(f.sql, id);
        // Only the last release spent its attempt.
        expect(job).toMatchObject({ state: 'retryable', attempt: 1 });
        expect(job!.errors.map((e) => e.error)).toEqual(
          Array(SHUTDOWN_RELEASE_LIMIT).fill(['unstarted', 'released on shutdown']).flat(),
        );
        expect(job!.retry_delay_ms).toBeGreaterThanOrEqual(1_000); // retried with backoff, not at once
        expect((await f.sql('SELECT shutdown_releases FROM awa.all_jobs WHERE id = $1', [id]))[0]).toEqual({
          shutdown_releases: 0,
        });
        expect(await leaseCount(f)).toBe(0);
      },
    );

    it('fails the job for good when the spent attempt was its last', async () => {
      const { id, runLease } = await seedRunning(f.sql, { attempt: 2, maxAttempts: 2 });
      await f.sql('UPDATE awa.jobs SET shutdown_releases = $2 WHERE id = $1', [id, SHUTDOWN_RELEASE_LIMIT - 1]);
      expect(await releaseOne({ id, runLease }, true)).toEqual([{ id, state: 'failed', notified: '0' }]);
      expect((await readJob(f.sql, id))!.finalized_at).toBeInstanceOf(Date);
    });

    it('ends an attempt with a cancel request cancelled, started or not, and never makes it available', async () => {
      const notes = await listen(await f.client(), 'awa_jobs');
      for (const started of [true, false]) {
        const job = await seedRunning(f.sql);
        await f.run(jobsSql.requestCancel, [job.id]);
        expect(await releaseOne(job, started)).toEqual([{ id: job.id, state: 'cancelled', notified: '0' }]);
        expect(await readJob(f.sql, job.id)).toMatchObject({ state: 'cancelled', attempt: 1 });
      }
      expect(await notes.take(f.sql)).toEqual([]);
    });
  });

  describe('a stored cancel request', () => {
    it.each([
      ['completeJobs', workerSql.completeJobs],
      ['completeJobsOutsideWorkflows', workerSql.completeJobsOutsideWorkflows],
    ] as const)('ends a completed (%s) or failed attempt cancelled', async (_, completeJobs) => {
      const done = await seedRunning(f.sql);
      const threw = await seedRunning(f.sql);
      await f.run(jobsSql.requestCancel, [done.id]);
      await f.run(jobsSql.requestCancel, [threw.id]);
      expect(await f.run(completeJobs, [[done.id], [done.runLease]])).toEqual([]); // none missed
      expect(await f.run(workerSql.failJobs, [[threw.id], [threw.runLease], ['boom'], [1_000], [2_000]])).toEqual([
        { id: threw.id, run_lease: threw.runLease, state: 'cancelled' },
      ]);
      expect(await readJob(f.sql, done.id)).toMatchObject({
        state: 'cancelled',
        errors: [{ error: RescueErrors.cancelled }],
      });
      const failed = await readJob(f.sql, threw.id);
      expect(failed).toMatchObject({ state: 'cancelled', errors: [{ error: 'boom' }] });
      expect(failed!.finalized_at).toBeInstanceOf(Date);
    });
  });

  describe('startLeases', () => {
    it('moves the deadline of held leases to now() + their deadline; fenced on the run lease', async () => {
      const held = await seedRunning(f.sql, { deadlineInMs: 1_000 });
      const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2, deadlineInMs: 1_000 });
      await f.run(workerSql.startLeases, [
        [held.id, wrong.id],
        [held.runLease, '1'],
        [60_000, 60_000],
      ]);
      const rows = await f.sql(
        `SELECT job_id::text, round(extract(epoch FROM deadline_at - ` +
          `now()))::int AS in_s FROM awa.active_leases ORDER BY job_id`,
      );
      expect(rows).toEqual([
        { job_id: held.id, in_s: 60 },
        { job_id: wrong.id, in_s: 1 },
      ]);
    });
  });

  describe('heartbeatLeases', () => {
    it(
      'sets heartbeat_at = now() on the leases still held and returns the ' +
        'ones it did not find; others are untouched',
      async () => {
        const held = await seedRunning(f.sql, { heartbeatAgeMs: 60_000 });
        const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2, heartbeatAgeMs: 60_000 });
        const gone = await seedRunning(f.sql);
        await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]);
        const tx = await f.client();
        await tx.query('BEGIN');
        try {
          const rows = await f.run(
            workerSql.heartbeatLeases,
            [
              [held.id, wrong.id, gone.id],
              [held.runLease, '1', gone.runLease],
            ],
            tx,
          );
          expect(rows.map((r) => `${r.job_id}@${r.run_lease}:${r.lost}`).sort()).toEqual(
            [`${wrong.id}@1:true`, `${gone.id}@${gone.runLease}:true`].sort(),
          );
          const leases = await execOn(tx)(
            `SELECT job_id::text, heartbeat_at = now() AS beat FROM awa.active_leases ORDER BY active_leases.job_id`,
          );
          expect(leases).toEqual([
            { job_id: held.id, beat: true },
            { job_id: wrong.id, beat: false },
          ]);
        } finally {
          await tx.query('COMMIT');
        }
        expect(
          await f.sql(
            `SELECT count(*)::int AS n FROM awa.active_leases WHERE heartbeat_at < now() - interval '59 seconds'`,
          ),
        ).toEqual([{ n: 1 }]);
      },
    );

    it('also returns the held leases with a cancel request, not lost', async () => {
      const asked = await seedRunning(f.sql);
      const quiet = await seedRunning(f.sql);
      await f.run(jobsSql.requestCancel, [asked.id]);
      const rows = await f.run(workerSql.heartbeatLeases, [
        [asked.id, quiet.id],
        [asked.runLease, quiet.runLease],
      ]);
      expect(rows).toEqual([{ job_id: asked.id, run_lease: asked.runLease, lost: false }]);
    });

    it('pinKeyLookups makes the transaction look leases up by primary key, and ends with it', async () => {
      // Many leases, as when the plan matters (on a tiny table a hash join is the right plan).
      await f.sql(
        `INSERT INTO awa.active_leases (job_id, run_lease, instance_id) ` +
          `SELECT g, 1, 'i' FROM generate_series(1, 10000) g`,
      );
      await f.sql('ANALYZE awa.active_leases');
      const tx = await f.client();
      await tx.query('BEGIN');
      try {
        await f.run(workerSql.pinKeyLookups, [], tx);
        expect((await tx.query('SHOW plan_cache_mode')).rows).toEqual([{ plan_cache_mode: 'force_generic_plan' }]);
        await tx.query(`PREPARE hb_plan(bigint[], bigint[]) AS ${workerSql.heartbeatLeases.text}`);
        // 500 pairs, a full heartbeat chunk: a custom plan would hash-join them against a seq scan.
        const ids = Array.from({ length: 500 }, (_, i) => String(i + 1));
        const literal = (xs: string[]) => `'{${xs.join(',')}}'`;
        const [{ 'QUERY PLAN': plan }] = (
          await tx.query(`EXPLAIN (FORMAT JSON) EXECUTE hb_plan(${literal(ids)}, ${literal(ids.map(() => '1'))})`)
        ).rows;
        expect(JSON.stringify(plan)).toContain('active_leases_pkey');
        expect(JSON.stringify(plan)).not.toContain('Seq Scan');
      } finally {
        await tx.query('ROLLBACK');
      }
      for (const setting of ['plan_cache_mode', 'enable_seqscan', 'enable_hashjoin', 'enable_mergejoin'])
        expect((await tx.query(`SHOW ${setting}`)).rows).toEqual([
          { [setting]: setting === 'plan_cache_mode' ? 'auto' : 'on' },
        ]);
    });

    const COMPLETIONS = [workerSql.completeJobs, workerSql.completeJobsOutsideWorkflows];

    /** The nodes of a completion's plan for the attempts `ids` (run lease 1), planned per call or generic. */
    const completionPlan = async (
      ids: string[],
      mode: 'custom' | 'generic',
      completion: SqlStatement = workerSql.completeJobs,
    ): Promise<PlanNode[]> => {
      const literal = (xs: string[]) => `'{${xs.join(',')}}'`;
      const tx = await f.client();
      await tx.query('BEGIN');
      try {
        let text = completion.text
          .replaceAll('$1::bigint[]', `${literal(ids)}::bigint[]`)
          .replaceAll('$2::bigint[]', `${literal(ids.map(() => '1'))}::bigint[]`);
        if (mode === 'generic') {
          await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
          await tx.query(`PREPARE completion_plan(bigint[], bigint[]) AS ${completion.text}`);
          text = `EXECUTE completion_plan(${literal(ids)}, ${literal(ids.map(() => '1'))})`;
        }
        const [{ 'QUERY PLAN': plan }] = (await tx.query(`EXPLAIN (FORMAT JSON) ${text}`)).rows;
        return planNodes((plan as Array<{ Plan: PlanNode }>)[0]!.Plan).filter((n) => n['Node Type'] !== 'ModifyTable');
      } finally {
        await tx.query('ROLLBACK');
        await tx.query('DEALLOCATE ALL');
      }
    };

    it('a completion of 512 jobs looks its leases up by primary key over a churned lease table, planned per call (behind a pooler) or generic', async () => {
      // What a soak leaves: 200,000 leases written and gone, 1,000 held, the pages kept
      // (vacuum_truncate is off), statistics of a few rows over thousands of pages. Before the
      // arrays came through sub-selects, a custom plan saw 512 pairs and scanned every page (the
      // 1-second completions of the soak).
      await f.sql(
        `INSERT INTO awa.active_leases (job_id, run_lease, instance_id) ` +
          `SELECT g, 1, 'i' FROM generate_series(1, 200000) g`,
      );
      await f.sql('DELETE FROM awa.active_leases WHERE job_id > 1000');
      await f.sql('VACUUM ANALYZE awa.active_leases');
      const ids = Array.from({ length: 512 }, (_, i) => String(i + 1));
      const leaseScans = async (mode: 'custom' | 'generic', completion: SqlStatement) =>
        (await completionPlan(ids, mode, completion))
          .filter((n) => n['Relation Name'] === 'active_leases' || n['Index Name']?.startsWith('active_leases'))
          .map(scanLabel);
      for (const completion of COMPLETIONS)
        for (const mode of ['custom', 'generic'] as const) {
          const scans = await leaseScans(mode, completion);
          const seqScans = scans.filter((scan) => scan === 'Seq Scan');
          expect({ completion: completion.name, mode, seqScans }).toEqual({
            completion: completion.name,
            mode,
            seqScans: [],
          });
          expect(scans.filter((scan) => scan.endsWith(' active_leases_pkey'))).not.toEqual([]);
        }
    });
    it('a completion of 512 jobs reads awa.jobs only by index condition when its statistics say it is empty (a burst after a quiet spell)', async () => {
      // Vacuumed while empty, its pages kept (vacuum_truncate is off): density 0, every row looks like
      // one. Then 100,000 jobs arrive before the next ANALYZE. A plan that read awa.jobs first, with
      // no condition, took 16 s per completion in such a table.
      await f.sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease)
                   SELECT 'k', 'q', 'running', 1, 1 FROM generate_series(1, 20000)`);
      await f.sql('DELETE FROM awa.jobs');
      await f.sql('VACUUM ANALYZE awa.jobs');
      await f.sql(`INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease)
                   SELECT 'k', 'q', 'running', 1, 1 FROM generate_series(1, 100000)`);
      const ids = (await f.sql('SELECT id::text AS id FROM awa.jobs ORDER BY id LIMIT 512')).map((r) => String(r.id));
      await f.sql(
        `INSERT INTO awa.active_leases (job_id, run_lease, instance_id) SELECT unnest($1::bigint[]), 1, 'i'`,
        [ids],
      );
      const unbounded = async (mode: 'custom' | 'generic', completion: SqlStatement) => {
        const scans = (await completionPlan(ids, mode, completion)).filter((n) => n['Relation Name'] === 'jobs');
        expect(scans.length).toBeGreaterThan(0);
        return scans.filter((n) => !n['Index Cond'] && !n['Recheck Cond']).map(scanLabel);
      };
      // jobs_waiting_idx holds only the jobs that wait for a workflow dependency (none here).
      for (const completion of COMPLETIONS)
        for (const mode of ['custom', 'generic'] as const) {
          const found = (await unbounded(mode, completion)).filter((s) => !s.includes('jobs_waiting_idx'));
          expect({ completion: completion.name, mode, unbounded: found }).toEqual({
            completion: completion.name,
            mode,
            unbounded: [],
          });
        }
    });

    it('completeJobsOutsideWorkflows is completeJobs without the workflow step: its plan reads no dependency', async () => {
      const ids = ['1', '2'];
      const dependencyScans = async (completion: SqlStatement) =>
        (await completionPlan(ids, 'generic', completion)).filter((n) => n['Relation Name'] === 'job_dependencies');
      expect(await dependencyScans(workerSql.completeJobs)).not.toEqual([]);
      expect(await dependencyScans(workerSql.completeJobsOutsideWorkflows)).toEqual([]);
    });
  });

  describe('cancelRunningJobs', () => {
    it('finalizes held attempts as cancelled with the error appended; fenced like completion', async () => {
      const held = await seedRunning(f.sql, { attempt: 2, runLease: 3 });
      const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2 });
      const rows = await f.run(workerSql.cancelRunningJobs, [
        [held.id, wrong.id],
        [held.runLease, '1'],
        'cancelled by test',
      ]);
      expect(rows.map((r) => r.id)).toEqual([held.id]);
      const job = await readJob(f.sql, held.id);
      expect(job).toMatchObject({
        state: 'cancelled',
        attempt: 2,
        errors: [{ attempt: 2, error: 'cancelled by test' }],
      });
      expect(job!.finalized_at).toBeInstanceOf(Date);
      expect(await leasesOf(f.sql, held.id)).toEqual([]);
      expect(await readJob(f.sql, wrong.id)).toMatchObject({ state: 'running', errors: [] });
      expect(await leasesOf(f.sql, wrong.id)).toEqual(['2@instance-a']);
    });
  });

  describe('completeJobsWithOutput', () => {
    it('stores each output and appends each note; a cancel request ends it cancelled, output not stored', async () => {
      const withOutput = await seedRunning(f.sql);
      const without = await seedRunning(f.sql);
      const noted = await seedRunning(f.sql);
      const cancelled = await seedRunning(f.sql);
      await f.sql(`UPDATE awa.active_leases SET cancel_requested = true WHERE job_id = $1`, [cancelled.id]);
      const jobs = [withOutput, without, noted, cancelled];
      const rows = await f.run(workerSql.completeJobsWithOutput, [
        jobs.map((j) => j.id),
        jobs.map((j) => j.runLease),
        ['{"total": 3, "text": "it\'s \\"done\\""}', null, null, '{"x": 1}'],
        [null, null, 'output not stored: too big', null],
      ]);
      expect(sortedIds(rows)).toEqual(jobs.map((j) => j.id).sort());
      const read = async (id: string) =>
        (await f.sql(`SELECT state, output, errors FROM awa.all_jobs WHERE id = $1`, [id]))[0];
      expect(await read(withOutput.id)).toEqual({
        state: 'completed',
        output: { total: 3, text: 'it\'s "done"' },
        errors: [],
      });
      expect(await read(without.id)).toEqual({ state: 'completed', output: null, errors: [] });
      expect(await read(noted.id)).toMatchObject({
        state: 'completed',
        output: null,
        errors: [{ attempt: 1, error: 'output not stored: too big' }],
      });
      expect(await read(cancelled.id)).toMatchObject({
        state: 'cancelled',
        output: null,
        errors: [{ attempt: 1, error: RescueErrors.cancelled }],
      });
      expect(await leaseCount(f)).toBe(0);
    });

    it('is fenced: a wrong run_lease or a lease already gone stores no output and is not returned', async () => {
      const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2 });
      const gone = await seedRunning(f.sql);
      await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]);
      const rows = await f.run(workerSql.completeJobsWithOutput, [
        [wrong.id, gone.id],
        ['1', gone.runLease],
        ['1', '2'],
        ['late', 'late'],
      ]);
      expect(rows).toEqual([]);
      const left = await f.sql(`SELECT state, output, errors FROM awa.all_jobs ORDER BY id`);
      expect(left).toEqual([
        { state: 'running', output: null, errors: [] },
        { state: 'running', output: null, errors: [] },
      ]);
      expect(await leasesOf(f.sql, wrong.id)).toEqual(['2@instance-a']);
    });
  });

  describe('snoozeJobs', () => {
    const snooze = (jobs: Array<{ id: string; runLease: string }>, delayMs: number, maxSnoozes = 100, on?: pg.Client) =>
      f.run(
        workerSql.snoozeJobs,
        [
          jobs.map((j) => j.id),
          jobs.map((j) => j.runLease),
          jobs.map(() => delayMs),
          jobs.map(() => maxSnoozes),
          jobs.map(() => `cap of ${maxSnoozes}`),
        ],
        on,
      );
    const snoozeState = async (id: string) =>
      (
        await f.sql(
          `SELECT state, attempt, snoozes, shutdown_releases, finalized_at, errors FROM awa.all_jobs WHERE id = $1`,
          [id],
        )
      )[0];

    it(
      'puts the job back to scheduled at now() + delay (database clock), gives the attempt back and counts ' +
        'the snooze',
      async () => {
        const job = await seedRunning(f.sql, { attempt: 3, runLease: 5 });
        await f.sql(`UPDATE awa.jobs SET shutdown_releases = 2, snoozes = 4 WHERE id = $1`, [job.id]);
        const client = await f.client();
        await client.query('BEGIN'); // now() stands still: run_at is exactly now() + delay
        expect(await snooze([job], 90_000, 100, client)).toEqual([
          { id: job.id, run_lease: job.runLease, state: 'scheduled' },
        ]);
        expect(await readJob(execOn(client), job.id)).toMatchObject({ run_at_in_ms: 90_000 });
        await client.query('COMMIT');
        expect(await snoozeState(job.id)).toEqual({
          state: 'scheduled',
          attempt: 2,
          snoozes: 5,
          shutdown_releases: 0,
          finalized_at: null,
          errors: [],
        });
        expect(await leasesOf(f.sql, job.id)).toEqual([]);
        // Not due yet: no claim takes it.
        expect(await claim('default', ['k'], 10)).toEqual([]);
      },
    );

    it('fails the job for good, with the cap error, once it snoozed maxSnoozes times', async () => {
      const atCap = await seedRunning(f.sql, { attempt: 2, runAtMs: -5_000 });
      const below = await seedRunning(f.sql);
      await f.sql(`UPDATE awa.jobs SET snoozes = 3 WHERE id = $1`, [atCap.id]);
      await f.sql(`UPDATE awa.jobs SET snoozes = 2 WHERE id = $1`, [below.id]);
      const rows = await snooze([atCap, below], 1_000, 3);
      expect(rows.sort((x, y) => Number(x.id) - Number(y.id)).map((r) => r.state)).toEqual(['failed', 'scheduled']);
      const failed = await snoozeState(atCap.id);
      expect(failed).toMatchObject({
        state: 'failed',
        attempt: 2,
        snoozes: 3,
        errors: [{ attempt: 2, error: 'cap of 3' }],
      });
      expect(failed.finalized_at).toBeInstanceOf(Date);
      expect((await readJob(f.sql, atCap.id))!.run_at_in_ms).toBeLessThan(-4_000); // run_at kept
      expect(await snoozeState(below.id)).toMatchObject({ state: 'scheduled', snoozes: 3, attempt: 0 });
    });

    it('ends an attempt with a cancel request cancelled instead of snoozing it', async () => {
      const job = await seedRunning(f.sql);
      await f.sql(`UPDATE awa.active_leases SET cancel_requested = true WHERE job_id = $1`, [job.id]);
      expect(await snooze([job], 1_000)).toMatchObject([{ state: 'cancelled' }]);
      expect(await snoozeState(job.id)).toMatchObject({
        state: 'cancelled',
        attempt: 1,
        snoozes: 0,
        errors: [{ error: RescueErrors.cancelled }],
      });
    });

    it('is fenced: a rescued attempt (lease gone, or a newer lease) snoozes nothing', async () => {
      const wrong = await seedRunning(f.sql, { attempt: 2, runLease: 2 });
      const gone = await seedRunning(f.sql);
      await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]);
      expect(await snooze([{ id: wrong.id, runLease: '1' }, gone], 1_000)).toEqual([]);
      expect(await snoozeState(wrong.id)).toMatchObject({ state: 'running', attempt: 2, snoozes: 0 });
      expect(await snoozeState(gone.id)).toMatchObject({ state: 'running', attempt: 1, snoozes: 0 });
      expect(await leasesOf(f.sql, wrong.id)).toEqual(['2@instance-a']);
    });

    it('spends no attempt and leaves the backoff alone: two snoozes, then a failure retries as attempt 1', async () => {
      const id = await seedJob(f.sql, { maxAttempts: 5 });
      let lastLease = 0n;
      for (let i = 0; i < 2; i++) {
        const [claimed] = await claim('default', ['k'], 1);
        expect(claimed).toMatchObject({ id, attempt: 1 });
        expect(BigInt(claimed!.run_lease)).toBeGreaterThan(lastLease); // each claim a new lease
        lastLease = BigInt(claimed!.run_lease);
        await snooze([{ id, runLease: claimed!.run_lease }], 60_000);
        await f.sql(`UPDATE awa.jobs SET run_at = now() WHERE id = $1`, [id]); // due at once
      }
      const [third] = await claim('default', ['k'], 1);
      expect(third).toMatchObject({ id, attempt: 1 });
      expect(BigInt(third!.run_lease)).toBeGreaterThan(lastLease);
      await f.run(workerSql.failJobs, [[id], [third!.run_lease], ['boom'], [10_000], [10_000_000]]);
      const job = await readJob(f.sql, id);
      expect(job).toMatchObject({ state: 'retryable', attempt: 1, errors: [{ attempt: 1, error: 'boom' }] });
      // The backoff of attempt 1: base * 2^0, plus up to 25% jitter (attempt 3 would be 4x).
      expect(job!.retry_delay_ms).toBeGreaterThanOrEqual(10_000);
      expect(job!.retry_delay_ms).toBeLessThanOrEqual(12_500);
      expect((await snoozeState(id)).snoozes).toBe(2);
    });
  });

  describe('writeProgress', () => {
    it('stores progress on held attempts only: never on a rescued one, nor on a job no longer running', async () => {
      const held = await seedRunning(f.sql);
      const gone = await seedRunning(f.sql);
      await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]);
      const newer = await seedRunning(f.sql, { attempt: 2, runLease: 2 });
      const rows = await f.run(workerSql.writeProgress, [
        [held.id, gone.id, newer.id],
        [held.runLease, gone.runLease, '1'],
        ['{"done": 40}', '"late"', '"late"'],
      ]);
      expect(rows).toEqual([{ id: held.id, run_lease: held.runLease }]);
      const progress = await f.sql(`SELECT id::text, progress FROM awa.all_jobs ORDER BY id`);
      expect(progress).toEqual([
        { id: held.id, progress: { done: 40 } },
        { id: gone.id, progress: null },
        { id: newer.id, progress: null },
      ]);
      // Once completed, the attempt's lease is gone: a progress write that comes late changes nothing.
      await f.run(workerSql.completeJobs, [[held.id], [held.runLease]]);
      expect(await f.run(workerSql.writeProgress, [[held.id], [held.runLease], ['{"done": 99}']])).toEqual([]);
      expect(await f.sql(`SELECT progress FROM awa.all_jobs WHERE id = $1`, [held.id])).toEqual([
        { progress: { done: 40 } },
      ]);
    });
  });

  it('ran every statement of worker.sql', () => {
    expect(
      statementsOf(workerSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
