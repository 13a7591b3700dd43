import { JobValueMessages } from '../awa.messages.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';
import { JobValueError } from './job-value.error.js';

/** The longest snooze: 365 days. */
export const MAX_SNOOZE_MS = 31_536_000_000;

/**
 * `ms` if it is a valid snooze delay (finite, > 0, at most MAX_SNOOZE_MS); else a JobValueError.
 * Here, below interfaces/, because both this error and JobSnooze (what job.snooze returns) check it.
 */
export function checkSnoozeDelay(ms: unknown): number {
  if (typeof ms === 'number' && Number.isFinite(ms) && ms > 0 && ms <= MAX_SNOOZE_MS) return ms;
  const got = typeof ms === 'number' || typeof ms === 'bigint' ? String(ms) : typeof ms;
  throw new JobValueError('snooze', JobValueMessages.snoozeInvalid(got, MAX_SNOOZE_MS));
}

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
