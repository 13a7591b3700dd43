import type { CronTime } from 'cron';
import { latestFire, nextFireAfter } from '../cron/cron.js';
import type { ScheduleMissed } from '../sql/schedules.sql.js';

/**
 * A fire at most this far behind the database clock is late, not missed: it is enqueued whatever
 * the schedule's `missed` policy, so a slow tick or a leader failover never drops a fire.
 */
export const MISSED_GRACE_MS = 60_000;

/** Most missed fires one schedule enqueues on catching up with `missed: 'all'` (the latest ones). */
export const MAX_MISSED_FIRES = 100;

/** What one tick does for one schedule. */
export interface FirePlan {
  /** Fire times to enqueue, oldest first. */
  fires: Date[];
  /** The schedule's next fire time (null: none within cron's horizon). */
  next: Date | null;
  /** Missed fires left out by the policy or the cap. */
  skipped: boolean;
}

/**
 * The fires of a schedule due at database time `now`, from its stored next fire `nextFireAt` on.
 * Fires within MISSED_GRACE_MS of `now` are all enqueued; older ones are missed, and `missed`
 * decides: 'skip' none, 'once' the latest of them, 'all' each (the latest MAX_MISSED_FIRES).
 */
export function planFires(time: CronTime, nextFireAt: Date, now: Date, missed: ScheduleMissed): FirePlan {
  const start = nextFireAt.getTime();
  const cutoff = now.getTime() - MISSED_GRACE_MS;
  const missedFires = start <= cutoff ? latestMissed(time, start, cutoff, missed) : { fires: [], skipped: false };
  const fires = missedFires.fires;
  let fire = start > cutoff ? start : nextFireAfter(time, cutoff);
  while (fire !== undefined && fire <= now.getTime()) {
    fires.push(fire);
    fire = nextFireAfter(time, fire);
  }
  return {
    fires: fires.map((ms) => new Date(ms)),
    next: fire === undefined ? null : new Date(fire),
    skipped: missedFires.skipped,
  };
}

/** The missed fires (in [start, cutoff]) that the policy enqueues, oldest first. */
function latestMissed(
  time: CronTime,
  start: number,
  cutoff: number,
  missed: ScheduleMissed,
): { fires: number[]; skipped: boolean } {
  if (missed === 'skip') return { fires: [], skipped: true };
  const latest = latestFire(time, start, cutoff) ?? start;
  if (missed === 'once') return { fires: [latest], skipped: latest !== start };
  // 'all': walk forward over a window that ends at the latest fire, widened until it holds the cap.
  const before = latestFire(time, start, latest - 1);
  let from = before === undefined ? start : Math.max(start, latest - (latest - before) * (MAX_MISSED_FIRES + 1));
  for (;;) {
    const fires = walk(time, from, latest);
    if (fires.length >= MAX_MISSED_FIRES || from === start)
      return { fires: fires.slice(-MAX_MISSED_FIRES), skipped: fires.length > MAX_MISSED_FIRES || from > start };
    from = Math.max(start, latest - 2 * (latest - from));
  }
}

/** Every fire in [from, to], oldest first (`from` itself counts as one: it is a stored fire or a bound). */
function walk(time: CronTime, from: number, to: number): number[] {
  const fires: number[] = [];
  let fire: number | undefined = nextFireAfter(time, from - 1);
  while (fire !== undefined && fire <= to) {
    fires.push(fire);
    fire = nextFireAfter(time, fire);
  }
  return fires;
}
