import type { JobState } from '../interfaces/job.interface.js';
import type { EnqueuedFire } from '../schedules/schedule-tick.js';

/** Which jobs `drain` runs. */
export interface DrainOptions {
  /** Only this queue (one this app has handlers for). Default: every queue with handlers. */
  queue?: string;
  /** Only jobs of these kinds (each must have a @JobHandler in this app). Default: every handled kind. */
  kind?: string | string[];
  /**
   * Also run scheduled jobs and retries whose time has not come yet, as if it had (like Oban's
   * `with_scheduled`); a job that keeps failing then runs until its attempts are spent. Default
   * false: only jobs due now run (a retry is due now with `retryBaseDelay: 0`).
   */
  withScheduled?: boolean;
}

/** One attempt `drain` ran, in run order. */
export interface DrainedJob {
  id: string;
  kind: string;
  queue: string;
  /** The attempt number (1 for the first run). */
  attempt: number;
  /** The job's state once this attempt's result was written. */
  state: JobState;
  /** What the handler threw (or the deadline text), for an attempt that failed. */
  error?: string;
}

/** What `drain` did: counts of the attempts it ran, by the state each left its job in. */
export interface DrainResult {
  completed: number;
  /** Failed for good (attempts spent). */
  failed: number;
  /** Failed, to be retried (state retryable). */
  retried: number;
  cancelled: number;
  jobs: DrainedJob[];
}

/** Which waiting jobs `enqueuedJobs` and `expectEnqueued` look at. */
export interface EnqueuedJobsFilter {
  kind?: string;
  queue?: string;
  /** Jobs whose args contain this (JSON containment, as PostgreSQL's `@>`: a partial deep match). */
  args?: unknown;
  /** Default ['available', 'scheduled']: enqueued and not run yet. */
  states?: JobState[];
}

/** Which schedules `fireSchedules` fires. */
export interface FireSchedulesOptions {
  /**
   * Fire the schedules as of this time: every fire due by then (per each schedule's `missed`
   * policy for fires long past). Default: the database's now.
   */
  at?: Date;
}

/** One fire `fireSchedules` enqueued: the schedule, its kind and queue, the fire time and the job's id. */
export type FiredSchedule = EnqueuedFire;
