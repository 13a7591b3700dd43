import { JobValueMessages } from '../awa.messages.js';
import { JobValueError } from '../errors/job-value.error.js';

/** The longest snooze: 365 days. */
export const MAX_SNOOZE_MS = 31_536_000_000;

/** `ms` if it is a valid snooze delay (finite, > 0, at most MAX_SNOOZE_MS); else a JobValueError. */
export function checkSnoozeDelay(ms: unknown): number {
  if (typeof ms === 'number' && Number.isFinite(ms) && ms > 0 && ms <= MAX_SNOOZE_MS) return ms;
  const got = typeof ms === 'number' || typeof ms === 'bigint' ? String(ms) : typeof ms;
  throw new JobValueError('snooze', JobValueMessages.snoozeInvalid(got, MAX_SNOOZE_MS));
}

/**
 * What `job.snooze(ms)` returns: a handler that returns it puts its job back to `scheduled`, due
 * `ms` from now (database clock), without spending an attempt. It is not stored as output.
 */
export class JobSnooze {
  readonly delayMs: number;

  /** @internal Made by job.snooze(ms), which validates `ms`. */
  constructor(delayMs: number) {
    this.delayMs = checkSnoozeDelay(delayMs);
  }
}
