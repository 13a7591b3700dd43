import { cronTimeOf } from '../cron/cron.js';
import { JOB_STATES } from '../interfaces/job.interface.js';
import { schedulesSql } from '../sql/index.js';
import type { ScheduleRow } from '../sql/schedules.sql.js';
import type { SqlStatement } from '../sql/sql-statement.js';
import { planFires } from './fire-times.js';

/** Runs a statement in the tick's transaction. */
export type TickExec = <P extends unknown[], R>(statement: SqlStatement<P, R>, values: P) => Promise<R[]>;

/** Prefix of every fire's unique key, and its tag: `awa:schedule:<name>`. */
export const SCHEDULE_KEY_PREFIX = 'awa:schedule:';

/** The unique key of one fire: the same (schedule, fire time) can never be enqueued twice. */
export function fireKey(name: string, fireAt: Date): string {
  return `${SCHEDULE_KEY_PREFIX}${name}:${fireAt.toISOString()}`;
}

/** A job of a schedule (a fire, or a run-now without a key), as insertScheduledJobs reads it. */
export function scheduleJob(
  schedule: Pick<ScheduleRow, 'name' | 'kind' | 'queue' | 'args' | 'concurrency_key'>,
  maxAttempts: number,
  runAt: Date,
  uniqueKey: string | null,
): object {
  return {
    kind: schedule.kind,
    queue: schedule.queue,
    args: schedule.args,
    max_attempts: maxAttempts,
    run_at: runAt.toISOString(),
    tags: [`${SCHEDULE_KEY_PREFIX}${schedule.name}`],
    unique_key: uniqueKey,
    concurrency_key: schedule.concurrency_key,
  };
}

/** One fire a tick enqueued. */
export interface EnqueuedFire {
  /** The schedule's name. */
  schedule: string;
  kind: string;
  queue: string;
  /** The fire time (the cron timeline's, not the time of the tick). */
  fireAt: Date;
  /** The id of its job. */
  jobId: string;
}

/** What one tick did, per schedule. */
export interface TickResult {
  /** Schedules the tick took (locked and moved on). */
  schedules: number;
  /** Jobs inserted (a fire already enqueued is not counted). */
  enqueued: number;
  /** The inserted fires, oldest schedule first. */
  fires: EnqueuedFire[];
  /** Schedules that had missed fires left out, with their policy. */
  skipped: Array<{ name: string; missed: string }>;
}

/** A tick as of another time than the database's now(): AwaTesting fires the schedules due at `at`. */
export interface TickAsOf {
  /** The time the schedules are due at. */
  at: Date;
  /** A fire's job runs at its fire time, or at this one if earlier (fires ahead of the clock run now). */
  latestRunAt: Date;
}

/**
 * One tick of the schedules, inside the caller's transaction: locks up to `limit` due schedules
 * (SKIP LOCKED), computes their fires from the stored next fire time up to the database's now()
 * (or `asOf.at`), inserts one job per fire under its unique key (a fire already there is skipped),
 * and moves each schedule's next and last fire times on. A tick that dies before its commit leaves
 * nothing behind.
 */
export async function runScheduleTick(
  exec: TickExec,
  limit: number,
  maxAttemptsOf: (queue: string) => number,
  asOf?: TickAsOf,
): Promise<TickResult> {
  const due = await exec(schedulesSql.lockDueSchedules, [limit, asOf?.at ?? null]);
  const jobs: object[] = [];
  const byKey = new Map<string, Omit<EnqueuedFire, 'jobId'>>();
  const advances: object[] = [];
  const skipped: TickResult['skipped'] = [];
  for (const row of due) {
    const plan = planFires(cronTimeOf(row.cron, row.time_zone), row.next_fire_at!, row.db_now, row.missed);
    if (plan.skipped) skipped.push({ name: row.name, missed: row.missed });
    for (const fire of plan.fires) {
      const key = fireKey(row.name, fire);
      const runAt = asOf && asOf.latestRunAt < fire ? asOf.latestRunAt : fire;
      jobs.push(scheduleJob(row, maxAttemptsOf(row.queue), runAt, key));
      byKey.set(key, { schedule: row.name, kind: row.kind, queue: row.queue, fireAt: fire });
    }
    advances.push({
      name: row.name,
      expected: row.next_fire_at!.toISOString(),
      next_fire_at: plan.next?.toISOString() ?? null,
      last_fire_at: plan.fires.at(-1)?.toISOString() ?? null,
    });
  }
  const inserted =
    jobs.length > 0 ? await exec(schedulesSql.insertScheduledJobs, [JSON.stringify(jobs), [...JOB_STATES]]) : [];
  if (advances.length > 0) await exec(schedulesSql.advanceSchedules, [JSON.stringify(advances)]);
  const fires = inserted.map(({ id, unique_key }) => ({ ...byKey.get(unique_key!)!, jobId: id }));
  return { schedules: due.length, enqueued: inserted.length, fires, skipped };
}
