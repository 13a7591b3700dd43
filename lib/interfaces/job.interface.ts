import type { EntityManager } from 'typeorm';
import type { JobSnooze } from './job-snooze.js';

/** Every state a job can be in. */
export const JOB_STATES = [
  'scheduled',
  'available',
  'running',
  'retryable',
  'completed',
  'failed',
  'cancelled',
  /** Waits for its dependencies in a workflow (docs/workflows.md); no claim reads it. */
  'waiting',
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
   * `return job.snooze(ms)`: puts the job back to `scheduled`, due `ms` from now (database clock),
   * spending no attempt and leaving the backoff as it was. Counts against the queue's maxSnoozes.
   * `ms`: finite, > 0, at most 365 days; else it throws a JobValueError.
   */
  snooze(ms: number): JobSnooze;
  /**
   * Stores a small JSON value as the job's `progress` (readable through getJob) while it runs.
   * Returns at once: writes are batched, and the latest value wins. Throws a JobValueError for a
   * value that is not JSON or is over maxProgressBytes.
   */
  progress(value: unknown): void;
  /**
   * Backs off (e.g. on HTTP 429): return the marker it gives (`return job.rateLimit(ms)`). The attempt
   * ends without spending an attempt, the job waits again, and the claims of its queue (of its key, if
   * the queue has keyConcurrency) are held back for `retryAfterMs` on every instance. Same as throwing
   * `new RateLimitedError(retryAfterMs)`.
   */
  rateLimit(retryAfterMs: number): RateLimited;
  /**
   * A workflow job's dependencies (docs/workflows.md): each one's ref, id, ending and output, by ref,
   * a page of at most `limit` (default and max 1000) after ref `after`. Empty for a job without any.
   */
  dependencyResults<TOutput = unknown>(options?: DependencyResultsOptions): Promise<DependencyResult<TOutput>[]>;
  /**
   * Adds steps to this job's workflow, written atomically with this attempt's completion (fenced: a
   * rescued attempt writes none): `jobs` as enqueueGraph takes them (refs local to the call), checked
   * now. The jobs waiting for this one also wait for the steps no other step waits for (split into N
   * pages, then merge). Once per attempt; a failure, snooze or cancel drops them. docs/workflows.md.
   */
  addSteps(jobs: ReadonlyArray<StepJob>, options?: Pick<GraphOptions, 'onDependencyFailure'>): void;
  /**
   * Runs `body` in one transaction of the app's DataSource that also completes the job: everything
   * written through `manager` (including `producer.enqueue(..., { manager })`) commits with the
   * completion, or nothing does. Fenced on this attempt's lease: if the attempt no longer owns the
   * job (rescued, released, past its deadline) or the job has a cancel request, it rolls back and
   * throws a JobTransactionError. Resolves with `body`'s value, stored as the job's output; the job
   * is completed then, whatever the handler does after. Once per attempt. See docs/exactly-once.md.
   */
  transaction<T>(body: JobTransactionBody<T>): Promise<T>;
}

/** What `job.transaction(body)` runs: the handler's writes, on the transaction's EntityManager. */
export type JobTransactionBody<T> = (manager: EntityManager) => T | Promise<T>;

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
  /** Makes the job unique: while a job with the same unique key blocks, a duplicate is not inserted. */
  unique?: UniqueOptions;
  /** Labels stored with the job (jobs.tags): at most 20 distinct non-empty strings of at most 100 characters. */
  tags?: readonly string[];
  /**
   * The key the queue's `keyConcurrency` limits (a tenant, an account): 1-200 characters. Default:
   * none. A queue with keyConcurrency claims keyed jobs only.
   */
  concurrencyKey?: string;
}

/**
 * What makes two jobs duplicates. The key is the kind (or `key`), plus the queue with `byQueue`, a
 * hash of the args with `byArgs` (object key order does not matter), and the time bucket with `period`.
 */
export interface UniqueOptions {
  /** The key in place of the kind: jobs of different kinds with the same key are duplicates. */
  key?: string;
  /** Adds the args (canonical JSON: object keys sorted) to the key. Default false. */
  byArgs?: boolean;
  /** Adds the queue to the key. Default false. */
  byQueue?: boolean;
  /** Milliseconds: adds floor(now / period), on the database clock, to the key. Default: no bucket. */
  period?: number;
  /**
   * States in which a job blocks a duplicate. Must contain scheduled, available, running and retryable;
   * may add completed, failed, cancelled. Default: those four.
   */
  states?: readonly JobState[];
  /**
   * Debounce: a duplicate of a job that is still waiting (scheduled, available, retryable) replaces its
   * args and runAt instead of being skipped. A running job is never replaced. Default false.
   */
  replace?: boolean;
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
  /** The workflow the job belongs to (docs/workflows.md), else null. */
  workflowId: string | null;
}

/** Result of producer.cancel(id). */
export type CancelResult =
  | { outcome: 'cancelled'; previousState: JobState }
  | { outcome: 'signalled'; previousState: 'running' }
  | { outcome: 'already-finished'; state: JobState }
  | { outcome: 'not-found' };

// Workflows (docs/workflows.md): what a handler's Job and the producer take and give.

/**
 * What a job does when one of its dependencies ends other than `completed` (failed, cancelled,
 * deleted): `cancel` ends it cancelled, `fail` ends it failed (both cascade to its own dependents by
 * their policies), `ignore` counts that dependency as done (the job runs and sees its ending in
 * `job.dependencyResults()`).
 */
export type DependencyFailurePolicy = 'cancel' | 'fail' | 'ignore';

/** One job of enqueueGraph: an enqueueMany item with a ref and its dependencies. */
export interface GraphJob<TArgs = unknown> extends Omit<EnqueueManyItem<TArgs>, 'unique'> {
  /**
   * As enqueue's, without `replace`: a job holding the key refuses the whole graph (UniqueConflictError
   * naming this ref), nothing inserted. Not in job.addSteps (StepJob).
   */
  unique?: Omit<UniqueOptions, 'replace'>;
  /** Names the job within the graph (1-200 characters, unique in it). */
  ref: string;
  /** Refs of the jobs this one waits for; it runs once they have all ended. */
  dependsOn?: readonly string[];
  /** For this job's dependencies. Default: the graph's, else 'cancel'. */
  onDependencyFailure?: DependencyFailurePolicy;
}

/** One step of job.addSteps: a graph job without `unique`. */
export type StepJob<TArgs = unknown> = Omit<GraphJob<TArgs>, 'unique'>;

export interface GraphOptions {
  /** The caller's EntityManager: the whole graph commits or rolls back with its transaction. */
  manager?: EntityManager;
  /** The policy of the jobs that set none. Default 'cancel'. */
  onDependencyFailure?: DependencyFailurePolicy;
}

/** One dependency of a job, as `job.dependencyResults()` gives it. */
export interface DependencyResult<TOutput = unknown> {
  ref: string;
  id: string;
  /** How it ended (`deleted` if it was deleted); a job reading it can only see ended ones. */
  state: JobState | 'deleted';
  /** Its handler's return value if it completed with one, else null. */
  output: TOutput | null;
}

/** Options of `job.dependencyResults()`: a page of at most `limit` (default and max 1000) after ref `after`. */
export interface DependencyResultsOptions {
  limit?: number;
  after?: string;
}
