import type { ScheduleMissed, ScheduleSource } from '../sql/schedules.sql.js';

export type { ScheduleMissed, ScheduleSource } from '../sql/schedules.sql.js';

/** A periodic job: every fire of `cron` enqueues one job of `kind` with `args`. */
export interface ScheduleDefinition<TArgs = unknown> {
  /** Unique name of the schedule (1-200 characters); part of each fire's unique key. */
  name: string;
  /** Cron expression: 5 fields (minute first) or 6 (second first), as @nestjs/schedule reads it. */
  cron: string;
  /** The job kind each fire enqueues. */
  kind: string;
  /** Args of each fire's job. Default null. */
  args?: TArgs;
  /** Queue of the jobs. Default: the queue of this app's handler for `kind`, else 'default'. */
  queue?: string;
  /** IANA time zone the cron expression is read in (e.g. 'Europe/Berlin'). Default: UTC. */
  timeZone?: string;
  /** Fires missed while no leader ran (the app was down): 'skip', 'once' (default) or 'all'. */
  missed?: ScheduleMissed;
  /**
   * Concurrency key of each fire's job (1-200 characters). Required when the queue (by default the
   * handler's) has keyConcurrency: it claims only keyed jobs, so the schedule is refused without one.
   */
  concurrencyKey?: string;
}

/** A stored schedule, as JobSchedules returns it. */
export interface ScheduleRecord<TArgs = unknown> {
  name: string;
  kind: string;
  queue: string;
  cron: string;
  /** null: UTC. */
  timeZone: string | null;
  args: TArgs;
  missed: ScheduleMissed;
  /** The concurrency key of each fire's job; null: none. */
  concurrencyKey: string | null;
  paused: boolean;
  /** When it fires next (database clock); null if the expression never fires again. */
  nextFireAt: Date | null;
  /** The latest fire that was enqueued, or null. */
  lastFireAt: Date | null;
  /** Where it was declared: @Periodic, the module option `schedules`, or JobSchedules at run time. */
  source: ScheduleSource;
}
