import { QueueAdmin } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { useQuietApp } from '../maintenance/quiet-app.js';
import { seedRunning } from '../support/job-factory.js';
import { waitForLockWait } from '../support/lock-waits.js';

/**
 * A bulk cancel flags the leases of running jobs, many per statement; a worker's completion or
 * heartbeat locks some of the same lease rows in its own batch's order. Forced interleaving: a
 * "completion" holds lease 2, the bulk cancel has locked lease 1 and waits for lease 2, then the
 * completion asks for lease 1. PostgreSQL breaks the deadlock by failing the bulk statement, which
 * cancelJobs runs again: its caller sees no error.
 */
describe('cancelJobs against a completion holding the same leases in another order', () => {
  const ctx = useQuietApp();

  it('ends without an error, every running job flagged or finished', async () => {
    const first = await seedRunning(ctx.exec, { kind: 'bulk.k' });
    const second = await seedRunning(ctx.exec, { kind: 'bulk.k' });
    const completer = ctx.app.get(DataSource).createQueryRunner();
    await completer.connect();
    try {
      await completer.startTransaction();
      await completer.query(`DELETE FROM awa.active_leases WHERE job_id = $1`, [second.id]);
      const cancelled = ctx.app
        .get(QueueAdmin)
        .cancelJobs({ kinds: ['bulk.k'] })
        .then(
          (result) => ({ result }),
          (error: unknown) => ({ error }),
        );
      // The bulk statement has flagged lease 1 and waits for lease 2.
      await waitForLockWait(ctx.exec, { statement: 'cancel_requested = true' }, 'the bulk cancel waiting for lease 2');
      // PostgreSQL fails the side whose deadlock check finds the cycle: the bulk cancel, which waited
      // first, unless its check ran before the cycle closed (a slow machine). A worker whose write
      // loses retries it (LeaseWriter.persist); here the completion just rolls back.
      let completionLost = false;
      try {
        await completer.query(`DELETE FROM awa.active_leases WHERE job_id = $1`, [first.id]);
        await completer.commitTransaction();
      } catch (error) {
        if ((error as { code?: string }).code !== '40P01') throw error;
        completionLost = true;
      }
      const outcome = await cancelled;
      // Run again after the completion committed, both leases gone: nothing left to flag. Or, when
      // the completion lost, both leases flagged the first time.
      expect(outcome).toEqual({ result: { count: completionLost ? 2 : 0, batches: 1 } });
    } finally {
      if (completer.isTransactionActive) await completer.rollbackTransaction();
      await completer.release();
    }
  });
});
