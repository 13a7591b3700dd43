import { checkSnoozeDelay } from '../errors/job-snoozed.error.js';

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
