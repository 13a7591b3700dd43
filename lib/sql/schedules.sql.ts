import { staleAfter } from './instances.sql.js';
import { statement } from './sql-statement.js';

export type ScheduleMissed = 'skip' | 'once' | 'all';
export type ScheduleSource = 'decorator' | 'options' | 'runtime';

/** A row of awa.schedules (SCHEDULE_COLUMNS). */
export interface ScheduleRow {
  name: string;
  kind: string;
  queue: string;
  args: unknown;
  cron: string;
  time_zone: string | null;
  missed: ScheduleMissed;
  paused: boolean;
  next_fire_at: Date | null;
  last_fire_at: Date | null;
  source: ScheduleSource;
  /** The concurrency key of each fire's job (null: none). */
  concurrency_key: string | null;
}

const SCHEDULE_COLUMNS =
  'name, kind, queue, args, cron, time_zone, missed, paused, next_fire_at, last_fire_at, source, concurrency_key';

/** The database clock: every fire time is computed from it, never from an instance's clock. */
export const databaseNow = statement<[], { now: Date }>('schedules_database_now', 'SELECT now() AS now');

/**
 * Creates or replaces schedules from one JSON array of {name, kind, queue, args, cron, time_zone,
 * missed, next_fire_at, concurrency_key}, all of source $2. A schedule whose cron and time zone did not change keeps
 * its next and last fire times (a restart neither loses nor repeats a fire); one whose timeline
 * changed starts over at the given next_fire_at. Paused stays as it is.
 */
export const upsertSchedules = statement<[schedulesJson: string, source: string], { name: string }>(
  'upsert_schedules',
  `
  INSERT INTO awa.schedules AS s (name, kind, queue, args, cron, time_zone, missed, next_fire_at, source,
                                  concurrency_key)
  SELECT t.name, t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.cron, t.time_zone, t.missed, t.next_fire_at, $2,
         t.concurrency_key
    FROM json_to_recordset($1::json) AS t(name text, kind text, queue text, args jsonb, cron text, time_zone text,
                                          missed text, next_fire_at timestamptz, concurrency_key text)
  ON CONFLICT (name) DO UPDATE SET
    kind = excluded.kind, queue = excluded.queue, args = excluded.args, missed = excluded.missed,
    concurrency_key = excluded.concurrency_key,
    next_fire_at = CASE WHEN s.cron = excluded.cron AND s.time_zone IS NOT DISTINCT FROM excluded.time_zone
                        THEN s.next_fire_at ELSE excluded.next_fire_at END,
    cron = excluded.cron, time_zone = excluded.time_zone, source = excluded.source, updated_at = now()
  RETURNING name`,
);

/** An instance row is live while its heartbeat is within its own heartbeatStaleAfter ($4 ms without settings). */
const LIVE_INSTANCE = `i.heartbeat_at >= now() - ${staleAfter('$4')}`;

/**
 * Removes the schedules declared in code (source decorator or options) that no live instance
 * declares any more: not the caller ($1, which declares $2 and handles the kinds $3, whether or not
 * its row is written yet), nor any other instance whose row is live (`schedules`, written with each
 * heartbeat). Only a schedule of a kind that the caller or another live instance handles goes: while
 * none handles it (its service is down), its fire times are kept for when it comes back. Runtime
 * schedules are never touched. So in a rolling deploy neither version removes the other's schedule,
 * and the leader (which runs this each sweep) removes one once its last declaring instance is gone.
 */
export const pruneDeclaredSchedules = statement<
  [self: string, declared: string[], kinds: string[], staleAfterMs: number],
  { name: string }
>(
  'prune_declared_schedules',
  `
  DELETE FROM awa.schedules s
   WHERE s.source IN ('decorator', 'options') AND NOT (s.name = ANY ($2::text[]))
     AND NOT EXISTS (SELECT 1 FROM awa.instances i
                      WHERE i.id <> $1 AND s.name = ANY (i.schedules) AND ${LIVE_INSTANCE})
     AND (s.kind = ANY ($3::text[])
          OR EXISTS (SELECT 1 FROM awa.instances i WHERE i.id <> $1 AND i.handlers ? s.kind AND ${LIVE_INSTANCE}))
  RETURNING s.name`,
);

export const listSchedules = statement<[], ScheduleRow>(
  'list_schedules',
  `SELECT ${SCHEDULE_COLUMNS} FROM awa.schedules ORDER BY name`,
);

export const getSchedule = statement<[name: string], ScheduleRow>(
  'get_schedule',
  `SELECT ${SCHEDULE_COLUMNS} FROM awa.schedules WHERE name = $1`,
);

export const deleteSchedule = statement<[name: string], { name: string }>(
  'delete_schedule',
  'DELETE FROM awa.schedules WHERE name = $1 RETURNING name',
);

export const pauseSchedule = statement<[name: string], { name: string }>(
  'pause_schedule',
  'UPDATE awa.schedules SET paused = true, updated_at = now() WHERE name = $1 RETURNING name',
);

/** Resumes a paused schedule from $2 on: the fires it would have had while paused are not made up. */
export const resumeSchedule = statement<[name: string, nextFireAt: Date | null], { name: string }>(
  'resume_schedule',
  `
  UPDATE awa.schedules
     SET next_fire_at = CASE WHEN paused THEN $2 ELSE next_fire_at END, paused = false, updated_at = now()
   WHERE name = $1
  RETURNING name`,
);

/**
 * Due schedules, locked for this transaction (SKIP LOCKED: another leader's tick takes the rest),
 * with the time they are due at (`db_now`): the database clock, or $2 when given (AwaTesting fires
 * the schedules as of a chosen time). One index scan on schedules_due_idx.
 */
export const lockDueSchedules = statement<[limit: number, at: Date | null], ScheduleRow & { db_now: Date }>(
  'lock_due_schedules',
  `
  SELECT ${SCHEDULE_COLUMNS}, coalesce($2::timestamptz, now()) AS db_now FROM awa.schedules
   WHERE NOT paused AND next_fire_at <= coalesce($2::timestamptz, now())
   ORDER BY next_fire_at
   LIMIT $1 FOR UPDATE SKIP LOCKED`,
);

/**
 * Inserts jobs from one JSON array of {kind, queue, args, max_attempts, run_at, tags, unique_key,
 * concurrency_key}. A job with a unique key gets unique_states $2, and a key already held (in one of
 * those states) is skipped: with every state in $2 the same fire can never be enqueued twice.
 * Returns the inserted, with their unique keys.
 */
export const insertScheduledJobs = statement<
  [jobsJson: string, uniqueStates: string[]],
  { id: string; unique_key: string | null }
>(
  'insert_scheduled_jobs',
  `
  INSERT INTO awa.jobs (kind, queue, args, max_attempts, run_at, state, tags, unique_key, unique_states,
                        concurrency_key)
  SELECT t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.max_attempts, t.run_at,
         CASE WHEN t.run_at > now() THEN 'scheduled' ELSE 'available' END, coalesce(t.tags, '{}'), t.unique_key,
         CASE WHEN t.unique_key IS NOT NULL THEN $2::text[] END, t.concurrency_key
    FROM json_to_recordset($1::json) AS t(kind text, queue text, args jsonb, max_attempts integer,
                                          run_at timestamptz, tags text[], unique_key text, concurrency_key text)
  ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state = ANY (unique_states) DO NOTHING
  RETURNING id::text, unique_key`,
);

/**
 * Moves locked schedules on, from one JSON array of {name, expected, next_fire_at, last_fire_at}.
 * `expected` is the next_fire_at the tick started from: a row that moved meanwhile is left alone.
 * A null last_fire_at keeps the stored one.
 */
export const advanceSchedules = statement<[advancesJson: string], { name: string }>(
  'advance_schedules',
  `
  UPDATE awa.schedules s
     SET next_fire_at = t.next_fire_at, last_fire_at = coalesce(t.last_fire_at, s.last_fire_at), updated_at = now()
    FROM json_to_recordset($1::json) AS t(name text, expected timestamptz, next_fire_at timestamptz,
                                          last_fire_at timestamptz)
   WHERE s.name = t.name AND s.next_fire_at = t.expected
  RETURNING s.name`,
);
