/**
 * One attempt of a job, as an observer of the core (telemetry) sees it: read-only, public-shaped
 * values, none of the worker's internals. The worker builds it once per attempt, as it claims the
 * job, and hands the same object with each of the attempt's events: an observer may key a WeakMap
 * on it (an open span, a start time) from `started` until `ended`.
 */
export interface ObservedAttempt {
  readonly jobId: string;
  readonly queue: string;
  readonly kind: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** When the job was due (its run_at), in ms since the epoch, by the database's clock. */
  readonly runAtMs: number;
  /** The W3C traceparent stored with the job at its enqueue, or null. */
  readonly traceparent: string | null;
  /** The job's workflow (docs/workflows.md), else null. */
  readonly workflowId: string | null;
}

/**
 * How an attempt's handler ended, as an observer sees it: it returned, threw, passed its hard
 * deadline, or backed off (job.rateLimit() or RateLimitedError).
 */
export interface ObservedOutcome {
  readonly kind: 'returned' | 'threw' | 'deadline' | 'rateLimited';
}
