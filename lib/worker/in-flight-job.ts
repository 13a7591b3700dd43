import { JobValueMessages } from '../awa.messages.js';
import { JobSnoozedError } from '../errors/job-snoozed.error.js';
import { JobValueError } from '../errors/job-value.error.js';
import type { ObservedAttempt } from '../events/observed-attempt.js';
import { backOffOf, rateLimitMarker } from './rate-limit.marker.js';
import type { Job, RateLimited } from '../interfaces/job.interface.js';
import type { ClaimedJobRow } from '../sql/worker.sql.js';
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
}

/**
 * One attempt this instance is running: the lease it holds, its abort signal and its local
 * deadline timer. It stays registered (and heartbeated) until its result is written.
 */
export class InFlightJob {
  readonly id: string;
  readonly runLease: string;
  /** `id:runLease`: a job can be claimed again (by this very instance) while a rescued attempt still runs. */
  readonly key: string;
  readonly job: Job;
  /** This attempt as the observers (telemetry) see it, carried by its events. */
  readonly observed: ObservedAttempt;
  /** Set once the handler settled (or timed out): heartbeats then no longer judge it. */
  settled = false;
  /** producer.cancel() was called for this attempt: it ends `cancelled`, whatever the handler does. */
  cancelRequested = false;
  /** The heartbeat found the lease gone (rescued): nothing this attempt writes counts any more. */
  lost = false;
  /** Set while it waits in the prefetch buffer: takes it out when it is cancelled or lost there. */
  whileBuffered: (() => void) | undefined;
  /** Made on first use of `job.signal`: most handlers never look at it. */
  private controller: AbortController | undefined;
  private abortReason: string | undefined;
  private interrupt: ((outcome: AttemptOutcome) => void) | undefined;
  /** What the handler returned (undefined: nothing), or a JobSnooze, also for a thrown JobSnoozedError. */
  returned: unknown;
  /** The output to store on completion, as JSON (see encodeOutput). */
  outputJson: string | undefined;
  /** Why the return value was not stored as output: appended to the job's errors on completion. */
  outputNote: string | undefined;
  /** The latest `job.progress()` value, as JSON, not written yet. */
  progressJson: string | undefined;
  /** Resolves once the progress queued last is written: the attempt's result is written after it. */
  progressWritten: Promise<void> | undefined;

  constructor(
    readonly row: ClaimedJobRow,
    private readonly progressSink?: ProgressSink,
    /** When its claim was sent, on the monotonic clock: the wait in the buffer is timed from it. */
    readonly claimedAt = performance.now(),
  ) {
    this.id = row.id;
    this.runLease = row.run_lease;
    this.key = leaseKey(row.id, row.run_lease);
    this.job = new AttemptJob(row, this);
    this.observed = {
      jobId: row.id,
      queue: row.queue,
      kind: row.kind,
      attempt: row.attempt,
      runAtMs: row.run_at_ms,
      traceparent: row.traceparent,
    };
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
    this.whileBuffered?.();
  }

  /** The lease was rescued: abort the handler, or drop the job if it has not started. */
  markLost(reason: string): void {
    this.lost = true;
    this.abort(reason);
    this.whileBuffered?.();
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
    this.interrupt?.({ kind: 'released' });
  }

  /** job.progress(value): validated now, written later (batched); the latest value wins. */
  reportProgress(value: unknown): void {
    const encoded = encodeJson(value);
    if ('problem' in encoded) throw new JobValueError('progress', JobValueMessages.progressInvalid(encoded.problem));
    const limit = this.progressSink?.maxProgressBytes ?? Infinity;
    if (encoded.bytes > limit)
      throw new JobValueError('progress', JobValueMessages.progressTooLarge(encoded.bytes, limit));
    if (this.settled || this.lost || !this.progressSink) return; // it could not land any more
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
    deadlineMs: number,
    onLate: (outcome: AttemptOutcome) => void,
    enter?: () => boolean,
  ): Promise<AttemptOutcome> {
    return new Promise((resolve) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (outcome: AttemptOutcome) => {
        if (done) {
          if (outcome.kind !== 'released') onLate(outcome);
          return;
        }
        done = true;
        if (timer) clearTimeout(timer);
        resolve(outcome);
      };
      this.interrupt = finish;
      if (deadlineMs > 0) {
        // unref: a pending deadline alone must not keep a stopping process alive.
        timer = setTimeout(() => finish({ kind: 'deadline' }), deadlineMs).unref();
      }
      const returned = (value: unknown) => {
        const backOff = settledAs(value, RETURNED);
        if (!done && backOff === RETURNED) this.returned = value;
        finish(backOff);
      };
      const threw = (error: unknown) =>
        error instanceof JobSnoozedError
          ? returned(new JobSnooze(error.delayMs))
          : finish(settledAs(error, { kind: 'threw', error }));
      if (enter && !enter()) {
        finish(UNSTARTED);
        return;
      }
      let result: unknown;
      try {
        result = handler(this.job);
      } catch (error) {
        threw(error);
        return;
      }
      Promise.resolve(result).then(returned, threw);
    });
  }
}

const RETURNED: AttemptOutcome = Object.freeze({ kind: 'returned' });
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
}
