import { JobValueMessages } from '../awa.messages.js';
import { JobSnoozedError } from '../errors/job-snoozed.error.js';
import { JobValueError } from '../errors/job-value.error.js';
import type { ObservedAttempt } from '../events/observed-attempt.js';
import type { DeadlineSweep } from './deadline-sweep.js';
import type { BufferHome } from './prefetch-buffer.js';
import { backOffOf, rateLimitMarker } from './rate-limit.marker.js';
import type { DependencyResult, DependencyResultsOptions } from '../interfaces/job.interface.js';
import { readDependencyResults, type DependencyReader } from './dependency-results.js';
import type { EncodedSteps } from './step-completion.js';
import type { GraphJob, GraphOptions } from '../interfaces/job.interface.js';
import { EnqueueValidationError } from '../errors/enqueue-validation.error.js';
import type { Job, JobTransactionBody, RateLimited } from '../interfaces/job.interface.js';
import { JobTransactionError } from '../errors/job-transaction.error.js';
import type { ClaimedJobRow } from '../sql/claim.sql.js';
import { encodeJson } from '../util/json-value.js';
import { JobSnooze } from '../interfaces/job-snooze.js';

export type { ClaimedJobRow };

export const leaseKey = (id: string, runLease: string) => `${id}:${runLease}`;

export type AttemptOutcome =
  | { kind: 'returned' }
  | { kind: 'threw'; error: unknown }
  | { kind: 'deadline' }
  /** The handler backed off (job.rateLimit() or RateLimitedError): give the attempt back, unspent. */
  | { kind: 'rateLimited'; retryAfterMs: number }
  /** Given back on shutdown: the lease was released, nothing more is written. */
  | { kind: 'released' }
  /** The handler was not entered (run's `enter` said no): the attempt is to be given back unspent. */
  | { kind: 'unstarted' };

/** Where an attempt's progress goes: the LeaseWriter. */
export interface ProgressSink {
  readonly maxProgressBytes: number;
  /** Queues a write of `job.progressJson`; resolves once it was written (or given up on). */
  writeProgress(job: InFlightJob): Promise<void>;
  /** Reads a workflow job's dependencies (job.dependencyResults()); absent: it has none to read. */
  readonly dependencies?: DependencyReader;
  /** Checks and encodes job.addSteps() (absent: steps are refused). */
  encodeSteps?(jobs: ReadonlyArray<GraphJob>, options: Pick<GraphOptions, 'onDependencyFailure'>): EncodedSteps;
  /** Runs job.transaction (see JobTransactions); absent, it throws. */
  readonly transactions?: { run<T>(job: InFlightJob, body: JobTransactionBody<T>): Promise<T> };
}

/**
 * One attempt this instance is running: the lease it holds, its abort signal and its local
 * deadline timer. It stays registered (and heartbeated) until its result is written.
 */
export class InFlightJob {
  // The fields an attempt's hot path sets are declared with a value: each attempt then has its whole
  // shape from construction, where fields added later cost it out-of-object storage and garbage (a
  // long drain's young collections were a quarter of the worker's CPU on Node 20).
  /** `id:runLease`, made on first use (the heartbeat's): most attempts never need it. */
  #key: string | undefined;
  readonly job: Job;
  #observed: ObservedAttempt | undefined;
  /** Set once the handler settled (or timed out): heartbeats then no longer judge it. */
  settled = false;
  /** When its worker started it, on the monotonic clock (0 until then): times the handler for the refill point. */
  startedAt = 0;
  /** producer.cancel() was called for this attempt: it ends `cancelled`, whatever the handler does. */
  cancelRequested = false;
  /** The heartbeat found the lease gone (rescued): nothing this attempt writes counts any more. */
  lost = false;
  /** The prefetch buffer it waits in, while it does: takes it out when it is cancelled or lost there. */
  bufferedIn: BufferHome<InFlightJob> | undefined = undefined;
  /** @internal Its place in the LeaseRegistry (-1: not there). */
  leaseSlot = -1;
  /** @internal Its place in its QueueWorker's running attempts (-1: not running). */
  runningSlot = -1;
  /** Made on first use of `job.signal`: most handlers never look at it. */
  private controller: AbortController | undefined;
  private abortReason: string | undefined;
  /** Set by start(): who gets the outcome, who hears of a settle after it, what times the deadline. */
  private done: ((outcome: AttemptOutcome, attempt: InFlightJob) => void) | undefined = undefined;
  private onLate: ((outcome: AttemptOutcome, attempt: InFlightJob) => void) | undefined = undefined;
  private timer: NodeJS.Timeout | undefined;
  private sweep: DeadlineSweep | undefined = undefined;
  /** The outcome was given (the handler settled, or the deadline or a release came first). */
  private ended = false;
  /** @internal When the queue's DeadlineSweep ends this attempt (see DeadlineEntry). */
  deadlineAt: number | undefined = undefined;
  /** What the handler returned (undefined: nothing), or a JobSnooze, also for a thrown JobSnoozedError. */
  returned: unknown = undefined;
  /** The output to store on completion, as JSON (see encodeOutput). */
  outputJson: string | undefined;
  /** Why the return value was not stored as output: appended to the job's errors on completion. */
  outputNote: string | undefined;
  /** The latest `job.progress()` value, as JSON, not written yet. */
  progressJson: string | undefined;
  /** Resolves once the progress queued last is written: the attempt's result is written after it. */
  progressWritten: Promise<void> | undefined;
  /** job.transaction was called; `transactionOpen` settles (never rejects) when it does. */
  transactionUsed = false;
  transactionOpen: Promise<void> | undefined;
  /** The job completed in job.transaction: whatever the handler does after, its end writes nothing. */
  completedInTransaction = false;

  /** Steps the handler added (job.addSteps), written with its completion. */
  steps: EncodedSteps | undefined;

  /** job.addSteps(): once per attempt. */
  addSteps(jobs: ReadonlyArray<GraphJob>, options: Pick<GraphOptions, 'onDependencyFailure'> = {}): void {
    if (this.steps || !this.progressSink?.encodeSteps)
      throw new EnqueueValidationError('steps', 'nestjs-awa: job.addSteps() may be called once per attempt.');
    if (this.completedInTransaction || this.transactionOpen)
      throw new EnqueueValidationError(
        'steps',
        'nestjs-awa: job.addSteps() after job.transaction() started: add the steps before it; they commit with it.',
      );
    this.steps = this.progressSink.encodeSteps(jobs, options);
  }

  /** @internal How long after claimedAt it may start (the PrefetchBuffer sets it from its claim's wait). */
  enterWithin = 0;

  /** @internal For job.dependencyResults(). */
  get dependencies(): DependencyReader | undefined {
    return this.progressSink?.dependencies;
  }

  constructor(
    readonly row: ClaimedJobRow,
    /** @internal Where progress and job.transaction go (the LeaseWriter). */
    readonly progressSink?: ProgressSink,
    /** When its claim was sent, on the monotonic clock: the wait in the buffer is timed from it. */
    readonly claimedAt = performance.now(),
  ) {
    this.job = new AttemptJob(row, this);
  }

  /** The job's id, read from its row (not copied: one field less per attempt). */
  get id(): string {
    return this.row.id;
  }

  /** This attempt's run lease, read from its row. */
  get runLease(): string {
    return this.row.run_lease;
  }

  /** This attempt as the observers (telemetry) see it, carried by its events: made on first use (none observe most). */
  get observed(): ObservedAttempt {
    const { row } = this;
    return (this.#observed ??= {
      jobId: row.id,
      queue: row.queue,
      kind: row.kind,
      attempt: row.attempt,
      runAtMs: row.run_at_ms,
      traceparent: row.traceparent,
      workflowId: row.workflow_id,
    });
  }

  /** `id:runLease`: a job can be claimed again (by this very instance) while a rescued attempt still runs. */
  get key(): string {
    return (this.#key ??= leaseKey(this.id, this.runLease));
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason !== undefined) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  cancel(reason: string): void {
    this.cancelRequested = true;
    this.abort(reason);
    this.bufferedIn?.leave(this);
  }

  /** The outcome was given (job.transaction may not start then). */
  get hasEnded(): boolean {
    return this.ended;
  }

  /** The lease was rescued: abort the handler, or drop the job if it has not started. */
  markLost(reason: string): void {
    // A heartbeat that finds the lease gone after job.transaction completed the job: not a loss.
    if (this.completedInTransaction || this.transactionOpen) return;
    this.lost = true;
    this.abort(reason);
    this.bufferedIn?.leave(this);
  }

  abort(reason: string): void {
    if (this.abortReason !== undefined) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  /** Ends the attempt now (shutdown): aborts the signal and stops waiting for the handler. */
  release(reason: string): void {
    this.settled = true;
    this.abort(reason);
    if (this.done) this.finish(RELEASED);
  }

  /** job.progress(value): validated now, written later (batched); the latest value wins. */
  reportProgress(value: unknown): void {
    const encoded = encodeJson(value);
    if ('problem' in encoded) throw new JobValueError('progress', JobValueMessages.progressInvalid(encoded.problem));
    const limit = this.progressSink?.maxProgressBytes ?? Infinity;
    if (encoded.bytes > limit)
      throw new JobValueError('progress', JobValueMessages.progressTooLarge(encoded.bytes, limit));
    if (this.settled || this.lost || this.completedInTransaction || !this.progressSink) return; // it could not land any more
    const queued = this.progressJson !== undefined;
    this.progressJson = encoded.json;
    if (!queued) this.progressWritten = this.progressSink.writeProgress(this);
  }

  /**
   * Runs the handler, racing it against the local hard deadline (0: none), counted from now, the
   * handler's start: a wait in the prefetch buffer is not charged (the lease's deadline_at moves
   * with it, see QueueWorker.pump). A handler that never settles cannot hold its slot past the
   * deadline: the attempt ends there and the late result, if any, is ignored by `onLate`.
   * `enter` is asked right before the handler is called, synchronously (no event loop turn between
   * them): false, and the handler is not called; the outcome is `unstarted`.
   */
  run(
    handler: (job: Job) => unknown,
    deadline: number | DeadlineSweep,
    onLate: (outcome: AttemptOutcome, attempt: InFlightJob) => void,
    enter?: (attempt: InFlightJob) => boolean,
  ): Promise<AttemptOutcome> {
    return new Promise((resolve) => this.start(handler, deadline, onLate, enter, resolve));
  }

  /**
   * run() on callbacks, for the worker's hot path: `done` is called once with the outcome, never
   * synchronously from this call. `deadline` is a duration in ms (0: none), timed here, or the
   * queue's DeadlineSweep, which times every attempt of the queue with one timer. The callbacks
   * get the attempt, so one function can serve every attempt of a queue.
   */
  start(
    handler: (job: Job) => unknown,
    deadline: number | DeadlineSweep,
    onLate: (outcome: AttemptOutcome, attempt: InFlightJob) => void,
    enter: ((attempt: InFlightJob) => boolean) | undefined,
    done: (outcome: AttemptOutcome, attempt: InFlightJob) => void,
  ): void {
    this.done = done;
    this.onLate = onLate;
    if (typeof deadline !== 'number') {
      this.sweep = deadline;
      deadline.add(this);
    } else if (deadline > 0) {
      // unref: a pending deadline alone must not keep a stopping process alive.
      this.timer = setTimeout(() => this.finish(DEADLINE), deadline).unref();
    }
    if (enter && !enter(this)) {
      // Not synchronously: a caller starting attempts in a loop must not be re-entered.
      void Promise.resolve().then(() => this.finish(UNSTARTED));
      return;
    }
    let result: unknown;
    try {
      result = handler(this.job);
    } catch (error) {
      void Promise.resolve().then(() => this.threw(error));
      return;
    }
    Promise.resolve(result).then(
      (value) => this.returnedValue(value),
      (error: unknown) => this.threw(error),
    );
  }

  /** @internal The queue's DeadlineSweep found this attempt past its deadline. */
  pastDeadline(): void {
    this.finish(DEADLINE);
  }

  private returnedValue(value: unknown): void {
    const backOff = settledAs(value, RETURNED);
    if (!this.ended && backOff === RETURNED && !this.completedInTransaction) this.returned = value;
    this.finish(backOff);
  }

  private threw(error: unknown): void {
    if (error instanceof JobSnoozedError) this.returnedValue(new JobSnooze(error.delayMs));
    else this.finish(settledAs(error, { kind: 'threw', error }));
  }

  private finish(outcome: AttemptOutcome): void {
    // Completed in job.transaction: what the handler did after (threw, backed off) changes nothing.
    if (this.completedInTransaction && outcome.kind !== 'released') outcome = RETURNED;
    if (this.ended) {
      if (outcome.kind !== 'released') this.onLate?.(outcome, this);
      return;
    }
    this.ended = true;
    if (this.timer) clearTimeout(this.timer);
    this.sweep?.remove(this);
    this.done!(outcome, this);
  }
}

const RETURNED: AttemptOutcome = Object.freeze({ kind: 'returned' });
const DEADLINE: AttemptOutcome = Object.freeze({ kind: 'deadline' });
const RELEASED: AttemptOutcome = Object.freeze({ kind: 'released' });
const UNSTARTED: AttemptOutcome = Object.freeze({ kind: 'unstarted' });

/** A back-off if the handler returned or threw one, else `otherwise`. */
function settledAs(value: unknown, otherwise: AttemptOutcome): AttemptOutcome {
  const retryAfterMs = backOffOf(value);
  return retryAfterMs === undefined ? otherwise : { kind: 'rateLimited', retryAfterMs };
}

/**
 * The Job a handler receives. A class with plain fields (not a frozen literal with getters): one
 * is made per attempt on the hot path. createdAt and signal are made on first use.
 */
class AttemptJob implements Job {
  readonly id: string;
  readonly kind: string;
  readonly queue: string;
  readonly args: unknown;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly priority: number;
  readonly runLease: string;
  readonly #createdMs: number;
  #createdAt: Date | undefined;
  readonly #inFlight: InFlightJob;

  constructor(row: ClaimedJobRow, inFlight: InFlightJob) {
    this.id = row.id;
    this.kind = row.kind;
    this.queue = row.queue;
    this.args = row.args;
    this.attempt = row.attempt;
    this.maxAttempts = row.max_attempts;
    this.priority = row.priority;
    this.runLease = row.run_lease;
    this.#createdMs = row.created_ms;
    this.#inFlight = inFlight;
  }

  get createdAt(): Date {
    return (this.#createdAt ??= new Date(this.#createdMs));
  }

  get signal(): AbortSignal {
    return this.#inFlight.signal;
  }

  snooze(ms: number): JobSnooze {
    return new JobSnooze(ms);
  }

  progress(value: unknown): void {
    this.#inFlight.reportProgress(value);
  }

  rateLimit(retryAfterMs: number): RateLimited {
    return rateLimitMarker(retryAfterMs);
  }

  dependencyResults<TOutput = unknown>(options?: DependencyResultsOptions): Promise<DependencyResult<TOutput>[]> {
    return readDependencyResults<TOutput>(this.#inFlight.dependencies, this.id, options);
  }

  addSteps(jobs: ReadonlyArray<GraphJob>, options?: Pick<GraphOptions, 'onDependencyFailure'>): void {
    this.#inFlight.addSteps(jobs, options);
  }

  transaction<T>(body: JobTransactionBody<T>): Promise<T> {
    const runner = this.#inFlight.progressSink?.transactions;
    return runner ? runner.run(this.#inFlight, body) : Promise.reject(new JobTransactionError('unavailable', this.id));
  }
}
