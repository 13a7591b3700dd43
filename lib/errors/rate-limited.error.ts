import { FlowMessages } from '../awa.messages.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';
import { JobValueError } from './job-value.error.js';

/** Largest back-off: the setTimeout cap. */
const MAX_RETRY_AFTER_MS = 2_147_483_647;

/** `retryAfterMs` as given, or a JobValueError (field `rateLimit`), as job.snooze() does for its delay. */
export function checkRetryAfter(retryAfterMs: unknown): number {
  if (typeof retryAfterMs !== 'number' || !(retryAfterMs >= 0 && retryAfterMs <= MAX_RETRY_AFTER_MS))
    throw new JobValueError('rateLimit', FlowMessages.retryAfterInvalid(String(retryAfterMs)));
  return retryAfterMs;
}

/**
 * Thrown by a handler to back off, e.g. on HTTP 429: the attempt ends without spending an attempt,
 * the job waits again, and the claims of its queue (of its key, with keyConcurrency) are held back for
 * `retryAfterMs` on every instance. The same as returning `job.rateLimit(retryAfterMs)`.
 */
export class RateLimitedError extends AwaError {
  readonly retryAfterMs: number;

  constructor(retryAfterMs: number, options?: ErrorOptions) {
    super(AwaErrorCodes.rateLimited, FlowMessages.rateLimited(checkRetryAfter(retryAfterMs)), options);
    this.retryAfterMs = retryAfterMs;
  }
}
