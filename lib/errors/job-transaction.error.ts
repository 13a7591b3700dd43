import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * Why a `job.transaction` did not commit: `lease-lost`, the attempt no longer owns its job (rescued,
 * released, ended by its deadline); `cancelled`, a cancel was requested for the job; `reused`,
 * job.transaction was called a second time in one attempt; `ended`, it was called after the attempt
 * had ended; `unavailable`, the attempt has no database to run it on (a Job made outside a worker).
 */
export type JobTransactionRefusal = 'lease-lost' | 'cancelled' | 'reused' | 'ended' | 'unavailable';

const MESSAGES: Record<JobTransactionRefusal, (id: string) => string> = {
  'lease-lost': (id) =>
    `job ${id}: this attempt no longer holds the job's lease (rescued, released or past its deadline); ` +
    `the transaction was rolled back`,
  cancelled: (id) => `job ${id} was cancelled; the transaction was rolled back`,
  reused: (id) => `job ${id}: job.transaction() may be called once per attempt; the job completed in the first`,
  ended: (id) => `job ${id}: job.transaction() was called after the attempt had ended`,
  unavailable: (id) => `job ${id}: job.transaction() is only available to a handler run by a worker`,
};

/**
 * Thrown by `job.transaction()` when the handler's writes could not commit with the job's completion:
 * none of them landed. Thrown on from the handler, it fails the attempt like any error (a lost or
 * cancelled attempt's failure is fenced out: the job's new owner, or the cancel, decides).
 */
export class JobTransactionError extends AwaError {
  constructor(
    readonly reason: JobTransactionRefusal,
    readonly jobId: string,
    options?: ErrorOptions,
  ) {
    super(AwaErrorCodes.jobTransaction, MESSAGES[reason](jobId), options);
  }
}
