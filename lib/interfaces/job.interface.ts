import type { EntityManager } from 'typeorm';

/** Every state a job can be in. */
export const JOB_STATES = [
  'scheduled',
  'available',
  'running',
  'retryable',
  'completed',
  'failed',
  'cancelled',
] as const;
export type JobState = (typeof JOB_STATES)[number];

/** One entry of a job's `errors` array. Later versions may add fields. */
export interface JobError {
  at: string;
  attempt: number;
  error: string;
  [extra: string]: unknown;
}

/** What a handler receives: one attempt of one job. */
export interface Job<TArgs = unknown> {
  /** The job id (a bigint, as a string). */
  readonly id: string;
  readonly kind: string;
  readonly queue: string;
  readonly args: TArgs;
  /** 1 on the first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly priority: number;
  /** The run lease this attempt holds; every state change is fenced on it. */
  readonly runLease: string;
  readonly createdAt: Date;
  /**
   * Aborted when this attempt should stop: the hard deadline passed, the lease was lost,
   * the instance shuts down, or the job was cancelled. `signal.reason` says which.
   */
  readonly signal: AbortSignal;
  /**
   * Backs off (e.g. on HTTP 429): return the marker it gives (`return job.rateLimit(ms)`). The attempt
   * ends without spending an attempt, the job waits again, and the claims of its queue (of its key, if
   * the queue has keyConcurrency) are held back for `retryAfterMs` on every instance. Same as throwing
   * `new RateLimitedError(retryAfterMs)`.
   */
  rateLimit(retryAfterMs: number): RateLimited;
}

/** What `job.rateLimit()` returns: a handler returns it to back off. */
export interface RateLimited {
  readonly retryAfterMs: number;
}

/** A handler for one job kind. */
export type JobHandlerFn<TArgs = unknown> = (job: Job<TArgs>) => unknown;

export interface EnqueueOptions {
  /** Queue name. Default: the queue of this app's handler for the kind, else 'default'. */
  queue?: string;
  /** Integer from -32768 to 32767; lower runs first. Default 0. */
  priority?: number;
  /** Run no earlier than this. Default: now. */
  runAt?: Date;
  /** Attempts before the job fails for good. Default: the queue's maxAttempts. */
  maxAttempts?: number;
  /** The caller's EntityManager: the job is inserted in the caller's transaction. */
  manager?: EntityManager;
  /**
   * The key the queue's `keyConcurrency` limits (a tenant, an account): 1-200 characters. Default:
   * none. A queue with keyConcurrency claims keyed jobs only.
   */
  concurrencyKey?: string;
}

export interface EnqueueManyItem<TArgs = unknown> extends Omit<EnqueueOptions, 'manager'> {
  kind: string;
  args: TArgs;
}

/** A job as stored, for inspection. */
export interface JobRecord<TArgs = unknown> {
  id: string;
  kind: string;
  queue: string;
  args: TArgs;
  state: JobState;
  priority: number;
  attempt: number;
  maxAttempts: number;
  runAt: Date;
  createdAt: Date;
  attemptedAt: Date | null;
  finalizedAt: Date | null;
  errors: JobError[];
  runLease: string;
  /** Tags given at enqueue, for filtering. */
  tags: string[];
  /** The unique key of a unique job, else null. */
  uniqueKey: string | null;
  /** Times the job snoozed (a snooze spends no attempt). */
  snoozes: number;
  /** The last value the handler reported with `job.progress()`, else null. */
  progress: unknown;
  /** The handler's return value, when it returned one, else null. */
  output: unknown;
}

/** Result of producer.cancel(id). */
export type CancelResult =
  | { outcome: 'cancelled'; previousState: JobState }
  | { outcome: 'signalled'; previousState: 'running' }
  | { outcome: 'already-finished'; state: JobState }
  | { outcome: 'not-found' };
