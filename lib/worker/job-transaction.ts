import type { EntityManager } from 'typeorm';
import { JobValueMessages } from '../awa.messages.js';
import type { AwaDatabase } from '../database/awa-database.js';
import { queryRowsWithManager } from '../database/typeorm-adapter.js';
import { JobTransactionError } from '../errors/job-transaction.error.js';
import type { JobTransactionBody } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { jobTransactionSql } from '../sql/index.js';
import { encodeJson } from '../util/json-value.js';
import type { InFlightJob } from './in-flight-job.js';
import { writeSteps, type RunStatement } from './step-completion.js';

/**
 * Runs an attempt's job.transaction: one transaction of the module's DataSource that takes the
 * attempt's fence (jobTransactionSql.holdAttempt), runs the handler's callback, and completes the
 * job (its output: the callback's value), or rolls all of it back. Once it committed, the attempt's
 * own end writes nothing (see writeAttemptOutcome): the job is completed.
 */
export class JobTransactions {
  constructor(
    private readonly db: AwaDatabase,
    private readonly options: Pick<ResolvedAwaOptions, 'heartbeatStaleAfter' | 'maxOutputBytes'>,
  ) {}

  run<T>(job: InFlightJob, body: JobTransactionBody<T>): Promise<T> {
    if (job.transactionUsed) return Promise.reject(new JobTransactionError('reused', job.id));
    if (job.hasEnded) return Promise.reject(new JobTransactionError('ended', job.id));
    job.transactionUsed = true;
    const committed = this.execute(job, body);
    // The attempt's end waits for this (see settled); it never rejects.
    const open = () => void (job.transactionOpen = undefined);
    job.transactionOpen = committed.then(open, open);
    return committed;
  }

  /**
   * Resolves once the attempt's open job.transaction settled, or after heartbeatStaleAfter: as long
   * as the server lets a silent transaction live, so a callback that never settles cannot hold the
   * attempt's end for ever.
   */
  async settled(job: InFlightJob): Promise<void> {
    if (!job.transactionOpen) return;
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise((r) => (timer = setTimeout(r, this.options.heartbeatStaleAfter).unref()));
    await Promise.race([job.transactionOpen, limit]);
    clearTimeout(timer);
  }

  private async execute<T>(job: InFlightJob, body: JobTransactionBody<T>): Promise<T> {
    if (job.progressWritten) await job.progressWritten; // progress reported before lands before
    const result = await this.db.dataSource.transaction(async (manager) => {
      await this.hold(manager, job);
      const value = await body(manager);
      // Steps the handler added (job.addSteps) commit here too, with the completion that waits on them.
      if (job.steps) {
        const run: RunStatement = (statement, values) => queryRowsWithManager(manager, statement, values);
        const steps = await writeSteps(run, job, job.steps);
        if (steps !== 'written') throw new JobTransactionError(steps === 'lost' ? 'lease-lost' : 'cancelled', job.id);
      }
      const { output, note } = encodeOutput(value, this.options.maxOutputBytes);
      const done = await queryRowsWithManager(manager, jobTransactionSql.completeAttempt, [
        job.id,
        job.runLease,
        output,
        note,
      ]);
      // Not completed: a cancel came in since the fence was taken (the lease itself cannot have gone).
      if (done.length === 0) await this.hold(manager, job, 'cancelled');
      return value;
    });
    job.completedInTransaction = true; // before transactionOpen resolves: its waiters read this
    return result;
  }

  /**
   * Takes (or re-reads) the fence; throws if the attempt lost it or its job has a cancel request. A
   * frozen process (SIGSTOP) must not hold the fence for ever: past heartbeatStaleAfter of silence
   * the server ends the session, the fence goes, and a rescue can run the job again.
   */
  private async hold(manager: EntityManager, job: InFlightJob, otherwise?: 'cancelled'): Promise<void> {
    const idle = String(this.options.heartbeatStaleAfter);
    const [held] = await queryRowsWithManager(manager, jobTransactionSql.holdAttempt, [job.id, job.runLease, idle]);
    if (!held) throw new JobTransactionError('lease-lost', job.id);
    if (held.cancel_requested || otherwise) throw new JobTransactionError(otherwise ?? 'cancelled', job.id);
  }
}

/** The callback's value as the job's output (undefined: none), or the note why it was not stored. */
function encodeOutput(value: unknown, maxBytes: number): { output: string | null; note: string | null } {
  if (value === undefined) return { output: null, note: null };
  const encoded = encodeJson(value);
  if ('problem' in encoded) return { output: null, note: JobValueMessages.outputInvalid(encoded.problem) };
  if (encoded.bytes > maxBytes) return { output: null, note: JobValueMessages.outputTooLarge(encoded.bytes, maxBytes) };
  return { output: encoded.json, note: null };
}
