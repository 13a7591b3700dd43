import { CronTime } from 'cron';
import { ScheduleMessages } from '../awa.messages.js';
import { AwaOptionError } from '../errors/awa-option.error.js';

// Cron expressions as both the options (maintenanceCron, ...) and the schedules read them, on the
// `cron` package's CronTime (the parser @nestjs/schedule uses).

/** The parsed timeline of a cron expression (throws cron's CronError on a bad expression or time zone). */
export function cronTimeOf(cron: string, timeZone: string | null | undefined): CronTime {
  return timeZone ? new CronTime(cron, timeZone) : new CronTime(cron);
}

/** The first fire strictly after `after` (ms), or undefined if there is none within cron's horizon. */
export function nextFireAfter(time: CronTime, after: number): number | undefined {
  try {
    return time.getNextDateFrom(new Date(after), time.timeZone).toMillis();
  } catch {
    return undefined; // e.g. '0 0 30 2 *': no date within cron's search horizon
  }
}

/**
 * The latest fire t with after < t <= atOrBefore (ms), found by bisection: cron has no "previous
 * fire", and walking forward from a fire weeks ago costs a step per fire.
 */
export function latestFire(time: CronTime, after: number, atOrBefore: number): number | undefined {
  const first = nextFireAfter(time, after);
  if (first === undefined || first > atOrBefore) return undefined;
  let lo = after;
  let hi = atOrBefore;
  // A fire lies in (lo, hi], and none after hi up to atOrBefore. Fires are whole seconds apart.
  while (hi - lo > 1_000) {
    const mid = Math.floor((lo + hi) / 2);
    const fire = nextFireAfter(time, mid);
    if (fire !== undefined && fire <= hi) lo = mid;
    else hi = mid;
  }
  return nextFireAfter(time, lo);
}

/** The shortest gap between the next few fires of `cron`, in ms. */
export function shortestGap(cron: string): number {
  const time = cronTimeOf(cron, undefined);
  const fires: number[] = [];
  let at = Date.now();
  for (let i = 0; i < 4; i++) {
    const next = nextFireAfter(time, at);
    if (next === undefined) break;
    fires.push(next);
    at = next;
  }
  const gaps = fires.slice(1).map((fire, i) => fire - fires[i]!);
  return Math.min(...gaps);
}

const show = (value: unknown) => (typeof value === 'string' ? JSON.stringify(value) : String(value));

/** Checks a cron expression and time zone; `at(key)` is the option path of a key, for errors. */
export function checkCron(cron: unknown, timeZone: unknown, at: (key: string) => string): void {
  if (timeZone !== undefined && timeZone !== null) {
    if (typeof timeZone !== 'string' || timeZone === '') throw new AwaOptionError(at('timeZone'), 'expected a string');
    try {
      cronTimeOf('* * * * *', timeZone);
    } catch {
      throw new AwaOptionError(at('timeZone'), ScheduleMessages.timeZoneInvalid(timeZone));
    }
  }
  if (typeof cron !== 'string' || cron.trim() === '')
    throw new AwaOptionError(at('cron'), `expected a cron expression, got ${show(cron)}`);
  let time;
  try {
    time = cronTimeOf(cron, timeZone as string | undefined);
  } catch (error) {
    throw new AwaOptionError(at('cron'), ScheduleMessages.cronInvalid(cron, (error as Error).message));
  }
  if (nextFireAfter(time, Date.now()) === undefined)
    throw new AwaOptionError(at('cron'), ScheduleMessages.cronNeverFires(cron));
}
