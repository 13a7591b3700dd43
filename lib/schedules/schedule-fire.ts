import type { PoolClient } from 'pg';
import { AwaDatabase } from '../database/awa-database.js';
import { QUEUE_DEFAULTS } from '../options/awa-options.defaults.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { schedulesSql } from '../sql/index.js';
import { runScheduleTick, type EnqueuedFire, type TickExec, type TickResult } from './schedule-tick.js';

/**
 * Schedules one tick takes at most: the leader's tick task and fireDueSchedules repeat the tick while
 * one comes back full.
 */
export const SCHEDULE_TICK_BATCH = 100;

/** The maxAttempts of a fire's job: its queue's. */
export function maxAttemptsOf(options: Pick<ResolvedAwaOptions, 'queues'>): (queue: string) => number {
  return (queue) => options.queues.get(queue)?.maxAttempts ?? QUEUE_DEFAULTS.maxAttempts;
}

const execOn =
  (client: PoolClient): TickExec =>
  (statement, values) =>
    AwaDatabase.queryOn<unknown[], unknown>(client, statement, values) as Promise<never[]>;

/**
 * One tick of the schedules (runScheduleTick) for the leader, in a transaction of its own; inside
 * the leader's fenced transaction (behind a transaction pooler), a savepoint of it on its
 * connection, since AwaDatabase.transaction joins the fence.
 */
export function tickSchedules(
  db: AwaDatabase,
  options: Pick<ResolvedAwaOptions, 'queues'>,
  limit: number,
): Promise<TickResult> {
  return db.transaction((client) => runScheduleTick(execOn(client), limit, maxAttemptsOf(options)));
}

/**
 * Enqueues the fires of every schedule due at `at` (default: the database's now), as the leader's
 * schedule tick does, but outside leadership (AwaTesting, where `testing: true` runs no tick):
 * each fire once, and the schedules move on past `at`. A fire after the database's now is enqueued
 * due now, so that its job can run at once. Resolves with the fires enqueued.
 */
export async function fireDueSchedules(
  db: AwaDatabase,
  options: Pick<ResolvedAwaOptions, 'queues'>,
  at?: Date,
): Promise<EnqueuedFire[]> {
  const fires: EnqueuedFire[] = [];
  for (;;) {
    const result = await db.transaction(async (client) => {
      const exec = execOn(client);
      const [clock] = await exec(schedulesSql.databaseNow, []);
      return runScheduleTick(exec, SCHEDULE_TICK_BATCH, maxAttemptsOf(options), at && { at, latestRunAt: clock!.now });
    });
    fires.push(...result.fires);
    if (result.schedules < SCHEDULE_TICK_BATCH) return fires;
  }
}
