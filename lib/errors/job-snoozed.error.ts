import { checkSnoozeDelay } from '../worker/job-snooze.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * Thrown by a handler, it snoozes the job like `return job.snooze(delayMs)`: back to `scheduled`,
 * due `delayMs` from now (database clock), spending no attempt. Handy deep in a call stack. An
 * invalid delay throws a JobValueError from the constructor.
 */
export class JobSnoozedError extends AwaError {
  readonly delayMs: number;

  constructor(delayMs: number) {
    const ms = checkSnoozeDelay(delayMs);
    super(AwaErrorCodes.jobSnoozed, `job snoozed for ${ms} ms`);
    this.delayMs = ms;
  }
}
