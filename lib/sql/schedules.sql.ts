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
}

const SCHEDULE_COLUMNS = 'name, kind, queue, args, cron, time_zone, missed, paused, next_fire_at, last_fire_at, source';

/** The database clock: every fire time is computed from it, never from an instance's clock. */
export const databaseNow = statement<[], { now: Date }>('schedules_database_now', 'SELECT now() AS now');

/**
 * Creates or replaces schedules from one JSON array of {name, kind, queue, args, cron, time_zone,
 * missed, next_fire_at}, all of source $2. A schedule whose cron and time zone did not change keeps
 * its next and last fire times (a restart neither loses nor repeats a fire); one whose timeline
 * changed starts over at the given next_fire_at. Paused stays as it is.
 */
export const upsertSchedules = statement<[schedulesJson: string, source: string], { name: string }>(
  'upsert_schedules',
  `
  INSERT INTO awa.schedules AS s (name, kind, queue, args, cron, time_zone, missed, next_fire_at, source)
  SELECT t.name, t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.cron, t.time_zone, t.missed, t.next_fire_at, $2
    FROM json_to_recordset($1::json) AS t(name text, kind text, queue text, args jsonb, cron text, time_zone text,
                                          missed text, next_fire_at timestamptz)
  ON CONFLICT (name) DO UPDATE SET
    kind = excluded.kind, queue = excluded.queue, args = excluded.args, missed = excluded.missed,
    next_fire_at = CASE WHEN s.cron = excluded.cron AND s.time_zone IS NOT DISTINCT FROM excluded.time_zone
                        THEN s.next_fire_at ELSE excluded.next_fire_at END,
    cron = excluded.cron, time_zone = excluded.time_zone, source = excluded.source, updated_at = now()
  RETURNING name`,
);

/**
 * Removes the schedules declared in code (source decorator or options) that this app no longer
 * declares ($1), among those of the kinds it handles ($2). Runtime schedules are never touched.
 */
export const pruneDeclaredSchedules = statement<[declared: string[], kinds: string[]], { name: string }>(
  'prune_declared_schedules',
  `
  DELETE FROM awa.schedules
   WHERE source IN ('decorator', 'options') AND NOT (name = ANY ($1::text[])) AND kind = ANY ($2::text[])
  RETURNING name`,
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
 * with the database clock. One index scan on schedules_due_idx.
 */
export const lockDueSchedules = statement<[limit: number], ScheduleRow & { db_now: Date }>(
  'lock_due_schedules',
  `
  SELECT ${SCHEDULE_COLUMNS}, now() AS db_now FROM awa.schedules
   WHERE NOT paused AND next_fire_at <= now()
   ORDER BY next_fire_at
   LIMIT $1 FOR UPDATE SKIP LOCKED`,
);

/**
 * Inserts jobs from one JSON array of {kind, queue, args, max_attempts, run_at, tags, unique_key}.
 * A job with a unique key gets unique_states $2, and a key already held (in one of those states) is
 * skipped: with every state in $2 the same fire can never be enqueued twice. Returns the inserted.
 */
export const insertScheduledJobs = statement<[jobsJson: string, uniqueStates: string[]], { id: string }>(
  'insert_scheduled_jobs',
  `
  INSERT INTO awa.jobs (kind, queue, args, max_attempts, run_at, state, tags, unique_key, unique_states)
  SELECT t.kind, t.queue, coalesce(t.args, 'null'::jsonb), t.max_attempts, t.run_at,
         CASE WHEN t.run_at > now() THEN 'scheduled' ELSE 'available' END, coalesce(t.tags, '{}'), t.unique_key,
         CASE WHEN t.unique_key IS NOT NULL THEN $2::text[] END
    FROM json_to_recordset($1::json) AS t(kind text, queue text, args jsonb, max_attempts integer,
                                          run_at timestamptz, tags text[], unique_key text)
  ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND state = ANY (unique_states) DO NOTHING
  RETURNING id::text`,
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
