import { JOB_STATES } from '../interfaces/job.interface.js';
import { schedulesSql } from '../sql/index.js';
import type { ScheduleRow } from '../sql/schedules.sql.js';
import type { SqlStatement } from '../sql/sql-statement.js';
import { cronTimeOf, planFires } from './fire-times.js';

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
  schedule: Pick<ScheduleRow, 'name' | 'kind' | 'queue' | 'args'>,
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
  };
}

/** What one tick did, per schedule. */
export interface TickResult {
  /** Schedules the tick took (locked and moved on). */
  schedules: number;
  /** Jobs inserted (a fire already enqueued is not counted). */
  enqueued: number;
  /** Schedules that had missed fires left out, with their policy. */
  skipped: Array<{ name: string; missed: string }>;
}

/**
 * One tick of the schedules, inside the caller's transaction: locks up to `limit` due schedules
 * (SKIP LOCKED), computes their fires from the stored next fire time up to the database's now(),
 * inserts one job per fire under its unique key (a fire already there is skipped), and moves each
 * schedule's next and last fire times on. A tick that dies before its commit leaves nothing behind.
 */
export async function runScheduleTick(
  exec: TickExec,
  limit: number,
  maxAttemptsOf: (queue: string) => number,
): Promise<TickResult> {
  const due = await exec(schedulesSql.lockDueSchedules, [limit]);
  const jobs: object[] = [];
  const advances: object[] = [];
  const skipped: TickResult['skipped'] = [];
  for (const row of due) {
    const plan = planFires(cronTimeOf(row.cron, row.time_zone), row.next_fire_at!, row.db_now, row.missed);
    if (plan.skipped) skipped.push({ name: row.name, missed: row.missed });
    for (const fire of plan.fires) jobs.push(scheduleJob(row, maxAttemptsOf(row.queue), fire, fireKey(row.name, fire)));
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
  return { schedules: due.length, enqueued: inserted.length, skipped };
}
