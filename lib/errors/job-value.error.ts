import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * A handler called `job.snooze(ms)` (or `new JobSnoozedError(ms)`), `job.rateLimit(ms)` (or
 * `new RateLimitedError(ms)`) or `job.progress(value)` with a value that cannot be used: `field` says
 * which (`snooze`, `rateLimit` or `progress`). Thrown synchronously, before
 * the database is touched; uncaught, it fails the attempt like any other error.
 */
export class JobValueError extends AwaError {
  constructor(
    readonly field: 'snooze' | 'rateLimit' | 'progress',
    message: string,
  ) {
    super(AwaErrorCodes.invalidJobValue, message);
  }
}
