import type { JobRecord, JobState } from '../interfaces/job.interface.js';

/** A queue as QueueAdmin.queueStates() reports it. */
export interface QueueState {
  name: string;
  paused: boolean;
  /** When it was paused (the first pause of a run of pauses), else null. */
  pausedAt: Date | null;
  /** Its jobs per state; every state is present (0 when none). */
  counts: Record<JobState, number>;
  /**
   * The states whose count is the planner's estimate (from the statistics ANALYZE keeps), not an
   * exact count: finished states (completed, failed, cancelled) once there are 10,000 or more
   * finished jobs. Empty while every count is exact.
   */
  estimated: JobState[];
  /** The run_at of its oldest `available` job, else null: how long the queue has been waiting. */
  oldestAvailableAt: Date | null;
}

/** Where a page of listJobs starts and how long it is. */
export interface JobPageOptions {
  /** The `next` of the previous page; omit for the first page. */
  after?: string;
  /** Jobs per page: 1 to 500, default 50. */
  limit?: number;
}

/** One page of listJobs, newest first. */
export interface JobPage {
  jobs: JobRecord[];
  /** The cursor of the next page (pass it as `after`), or null on the last page. */
  next: string | null;
}

export type RetryJobResult =
  | { outcome: 'retried' }
  | { outcome: 'not-found' }
  /** The job is not finished (running, available, scheduled, retryable): nothing was changed. */
  | { outcome: 'not-retryable'; state: JobState }
  /** A unique job whose key another job (`existingId`) holds now: nothing was changed. */
  | { outcome: 'duplicate'; existingId: string };

export type DeleteJobResult =
  | { outcome: 'deleted' }
  | { outcome: 'not-found' }
  /** A running job is never deleted; cancel it (cancelJob), then delete it once it has ended. */
  | { outcome: 'running' };

/** The result of retryJobs and cancelJobs. */
export interface BulkResult {
  /** Jobs changed: retried; or cancelled, counting the running ones that got a cancel request. */
  count: number;
  /** Statements run, each its own short transaction. */
  batches: number;
}

/** The result of deleteJobs. */
export interface BulkDeleteResult {
  deleted: number;
  /** Running jobs that matched: not deleted, but given a cancel request. */
  cancelled: number;
  batches: number;
}

/** A concurrency key of a queue, as QueueAdmin.keyStates() reports it (a row of awa.flow_keys). */
export interface KeyState {
  key: string;
  /** Attempts of the key holding a lease now, over all instances. */
  running: number;
  /** The key has, or may have, jobs waiting: set when one becomes available, cleared by a claim that found none. */
  waiting: boolean;
  /** Its own limit (setKeyConcurrency), or null: the queue's keyConcurrency. */
  limit: number | null;
  /** The end of its back-off hold (job.rateLimit()), while in force; else null. */
  heldUntil: Date | null;
  /** When a claim last started an attempt of it; null if never. */
  lastClaimedAt: Date | null;
}

/** Where a page of keyStates starts and how long it is. */
export interface KeyPageOptions {
  /** The `next` of the previous page; omit for the first page. */
  after?: string;
  /** Keys per page: 1 to 500, default 50. */
  limit?: number;
}

/** One page of keyStates, by key. */
export interface KeyPage {
  keys: KeyState[];
  /** The cursor of the next page (pass it as `after`), or null on the last page. */
  next: string | null;
}
