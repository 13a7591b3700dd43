import type pg from 'pg';
import { jobTransactionSql, maintenanceSql, workerSql } from '../../lib/sql/index.js';
import { seedJob, seedRunning } from '../support/job-factory.js';
import { waitForLockWait } from '../support/lock-waits.js';
import { execOn, leasesOf, readJob, statementsOf, useSqlFixture } from './sql-fixture.js';

/** job.transaction's fence (holdAttempt) and its completion inside the handler's transaction (completeAttempt). */
describe('job-transaction.sql', () => {
  const f = useSqlFixture();

  const rescueDeadlines = () =>
    f.run(maintenanceSql.rescueExpiredDeadlines, [[], [], [], 10, 10, 100, 'past its deadline']);
  const outputOf = async (id: string) =>
    (await f.sql('SELECT output FROM awa.all_jobs WHERE id = $1::bigint', [id]))[0]?.output as unknown;

  /** Runs `body` with an open transaction on a client of its own that holds the attempt's fence. */
  async function holding(attempt: { id: string; runLease: string }, body: (c: pg.Client) => Promise<void>) {
    const c = await f.client();
    await c.query('BEGIN');
    try {
      expect(await f.run(jobTransactionSql.holdAttempt, [attempt.id, attempt.runLease, '60000'], c)).toEqual([
        { cancel_requested: false },
      ]);
      // The fence sets the transaction's idle limit in the same round trip.
      expect(await execOn(c)('SHOW idle_in_transaction_session_timeout')).toEqual([
        { idle_in_transaction_session_timeout: '1min' },
      ]);
      await body(c);
    } finally {
      await c.query('ROLLBACK').catch(() => undefined);
    }
  }

  describe('holdAttempt', () => {
    it("returns the lease's cancel request while the attempt holds its running job", async () => {
      const held = await seedRunning(f.sql);
      expect(await f.run(jobTransactionSql.holdAttempt, [held.id, held.runLease, null])).toEqual([
        { cancel_requested: false },
      ]);
      await f.sql('UPDATE awa.active_leases SET cancel_requested = true WHERE job_id = $1', [held.id]);
      expect(await f.run(jobTransactionSql.holdAttempt, [held.id, held.runLease, null])).toEqual([
        { cancel_requested: true },
      ]);
    });

    it('returns nothing for a stale lease, a lease gone, or a job not running on it', async () => {
      const held = await seedRunning(f.sql, { attempt: 2 });
      expect(await f.run(jobTransactionSql.holdAttempt, [held.id, '1', null])).toEqual([]);
      const gone = await seedRunning(f.sql);
      await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [gone.id]);
      expect(await f.run(jobTransactionSql.holdAttempt, [gone.id, gone.runLease, null])).toEqual([]);
      const waiting = await seedJob(f.sql, { state: 'retryable', attempt: 1, runLease: 1 });
      expect(await f.run(jobTransactionSql.holdAttempt, [waiting, '1', null])).toEqual([]);
    });

    it('makes every rescue skip the lease while it is held, and take it once the holder rolled back', async () => {
      const held = await seedRunning(f.sql, { deadlineInMs: -1_000, heartbeatAgeMs: 3_600_000 });
      await holding(held, async () => {
        expect(await rescueDeadlines()).toEqual([]);
        expect(
          await f.run(maintenanceSql.rescueStaleHeartbeats, [[], [], [], 10, 10, 100, 1_000, 'stale heartbeat']),
        ).toEqual([]);
        expect(
          await f.run(maintenanceSql.rescueOrphanedLeases, [[], [], [], 10, 10, 100, ['instance-a'], 'died: ']),
        ).toEqual([]);
        expect(await leasesOf(f.sql, held.id)).toEqual([`${held.runLease}@instance-a`]);
      });
      expect(await rescueDeadlines()).toEqual([expect.objectContaining({ id: held.id, state: 'retryable' })]);
    });

    it('lets heartbeats and cancel requests through, and makes the worker’s own end wait, then find the lease gone', async () => {
      const held = await seedRunning(f.sql);
      await holding(held, async (c) => {
        expect(await f.run(workerSql.heartbeatLeases, [[held.id], [held.runLease]])).toEqual([]);
        await f.sql('UPDATE awa.active_leases SET cancel_requested = true WHERE job_id = $1', [held.id]);
        await f.sql('UPDATE awa.active_leases SET cancel_requested = false WHERE job_id = $1', [held.id]);
        const failing = f.run(workerSql.failJobs, [[held.id], [held.runLease], ['boom'], [10], [10]]);
        await waitForLockWait(f.sql, { statement: 'awa.active_leases' }, 'the failure to wait on the fence');
        expect(
          await f.run(jobTransactionSql.completeAttempt, [held.id, held.runLease, '{"n":1}', null], c),
        ).toHaveLength(1);
        await c.query('COMMIT');
        expect(await failing).toEqual([]);
      });
      expect(await readJob(f.sql, held.id)).toMatchObject({ state: 'completed', errors: [] });
      expect(await outputOf(held.id)).toEqual({ n: 1 });
    });
  });

  describe('completeAttempt', () => {
    it('completes the attempt with its output, moving the job to awa.job_history, and drops the lease', async () => {
      const held = await seedRunning(f.sql);
      expect(await f.run(jobTransactionSql.completeAttempt, [held.id, held.runLease, '[1,2]', null])).toEqual([
        { id: held.id, run_lease: held.runLease },
      ]);
      const [row] = await f.sql('SELECT state, output, finalized_at FROM awa.job_history WHERE id = $1', [held.id]);
      expect(row).toMatchObject({ state: 'completed', output: [1, 2] });
      expect(row.finalized_at).not.toBeNull();
      expect(await leasesOf(f.sql, held.id)).toEqual([]);
    });

    it('appends a note instead of an output it could not store', async () => {
      const held = await seedRunning(f.sql);
      await f.run(jobTransactionSql.completeAttempt, [held.id, held.runLease, null, 'output not stored']);
      const job = await readJob(f.sql, held.id);
      expect(job?.errors).toEqual([expect.objectContaining({ attempt: 1, error: 'output not stored' })]);
      expect(await outputOf(held.id)).toBeNull();
    });

    it('refuses an attempt with a cancel request, and a stale one, changing nothing', async () => {
      const cancelled = await seedRunning(f.sql);
      await f.sql('UPDATE awa.active_leases SET cancel_requested = true WHERE job_id = $1', [cancelled.id]);
      expect(await f.run(jobTransactionSql.completeAttempt, [cancelled.id, cancelled.runLease, null, null])).toEqual(
        [],
      );
      expect(await readJob(f.sql, cancelled.id)).toMatchObject({ state: 'running' });
      const stale = await seedRunning(f.sql, { attempt: 2 });
      expect(await f.run(jobTransactionSql.completeAttempt, [stale.id, '1', null, null])).toEqual([]);
      expect(await readJob(f.sql, stale.id)).toMatchObject({ state: 'running', run_lease: '2' });
    });
  });

  it('every statement of job-transaction.sql.ts ran in this file', () => {
    expect(
      statementsOf(jobTransactionSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });

  it('leaves the attempt running, its lease held, when the completion rolls back with the handler’s writes', async () => {
    const held = await seedRunning(f.sql);
    await holding(held, async (c) => {
      await f.run(jobTransactionSql.completeAttempt, [held.id, held.runLease, null, null], c);
      expect(await execOn(c)('SELECT count(*)::int AS n FROM awa.active_leases WHERE job_id = $1', [held.id])).toEqual([
        { n: 0 },
      ]);
      expect(await leasesOf(f.sql, held.id)).toEqual([`${held.runLease}@instance-a`]);
    });
    expect(await leasesOf(f.sql, held.id)).toEqual([`${held.runLease}@instance-a`]);
  });
});
