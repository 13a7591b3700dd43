import { ScheduleMessages } from '../awa.messages.js';
import { checkCron, shortestGap } from '../cron/cron.js';
import { AwaOptionError } from '../errors/awa-option.error.js';

/** How a periodic tick of the leader is timed: every `interval` ms, or on the fires of `cron`. */
export interface TickTimer {
  /** The ms interval; with a cron, the shortest gap between its next fires (budgets and leases use it). */
  interval: number;
  cron: string | undefined;
}

/**
 * One tick's two forms, of which at most one may be set: `intervalKey` (ms, checked by `interval`,
 * which also supplies the default) or `cronKey` (a cron expression; 6 fields give seconds).
 */
export function resolveTickTimer(
  raw: { interval: unknown; cron: unknown },
  intervalKey: string,
  cronKey: string,
  interval: () => number,
): TickTimer {
  if (raw.cron === undefined) return { interval: interval(), cron: undefined };
  if (raw.interval !== undefined)
    throw new AwaOptionError(cronKey, ScheduleMessages.bothTimerForms(intervalKey, cronKey));
  checkCron(raw.cron, undefined, () => cronKey);
  const cron = raw.cron as string;
  return { interval: shortestGap(cron), cron };
}
