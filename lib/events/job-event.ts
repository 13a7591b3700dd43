import type { JobEventName } from '../decorators/on-job-event.decorator.js';
import type { JobState } from '../interfaces/job.interface.js';

/** A durable job event, as an @OnJobEvent handler receives it. */
export interface JobEvent {
  /** The event's id: unique, and increasing within one transaction (the order is that of `position`). */
  id: string;
  /** The group it is delivered to. */
  group: string;
  event: JobEventName;
  jobId: string;
  kind: string;
  queue: string;
  /** The job's state after the transition (for `deleted`, the state it was deleted in). */
  state: JobState;
  /** The job's attempt after the transition. */
  attempt: number;
  /** When the transition's transaction started. */
  at: Date;
  /** The error text of a `failed`, `retrying`, `cancelled` or `rescued` event; undefined otherwise. */
  error?: string;
}

/** A group's position and lag (JobEventGroups.groups()). */
export interface JobEventGroupState {
  group: string;
  /** The named AwaModule whose database holds the group; absent for the default module's. */
  module?: string;
  /** The instance delivering it (its lease), null when none holds it. */
  holder: string | null;
  leaseUntil: Date | null;
  /** Failed deliveries of its next event in a row, and the last error. */
  failures: number;
  lastError: string | null;
  /** Subscribed events not yet acknowledged, counted up to JOB_EVENT_LAG_CAP. */
  lagEvents: number;
  /** Age of the oldest of them, in ms; 0 when there is none. */
  lagMs: number;
}

/** How far groups() counts a group's lag in events. */
export const JOB_EVENT_LAG_CAP = 10_000;
