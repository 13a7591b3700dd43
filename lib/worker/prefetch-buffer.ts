import {
  bufferWaitLimit,
  keepDeadlineWithin,
  RateClaimAllowance,
  rateEntryWait,
  RateEntryWait,
  rateEntryWaitMax,
} from './prefetch-limits.js';
import { RefillPoint } from './refill-point.js';

/** What the buffer needs of a claimed job (an InFlightJob). */
export interface BufferedJob {
  /** When its claim was sent, on the buffer's clock: its wait is timed from it. */
  readonly claimedAt: number;
  /** How long after claimedAt it may start: the wait its claim was sent with (set by add). */
  enterWithin: number;
  /** The buffer it waits in, while it does: takes it out when it is cancelled or its lease is lost there. */
  bufferedIn: BufferHome<this> | undefined;
}

/** Where a buffered job goes when it is cancelled or loses its lease while it waits (a PrefetchBuffer). */
export interface BufferHome<J> {
  leave(job: J): void;
}

/** The queue options that size the buffer. */
export interface BufferLimits {
  readonly concurrency: number;
  readonly prefetch: number;
  readonly rateLimit: { readonly period: number } | null;
  readonly deadlineDuration: number;
  readonly pollInterval: number;
}

/** The buffer's owner (the QueueWorker): it writes what the buffer lets go, and starts jobs. */
export interface BufferOwner<J> {
  /** Jobs that waited past the wait limit: give them back unstarted, without spending an attempt. */
  giveBack(jobs: J[]): void;
  /** A buffered job was cancelled or lost its lease: it never runs. */
  dropped(job: J): void;
  /** A rate-limited buffer's oldest job reached the end of its wait: start what may start (see take). */
  pump(): void;
}

/** The monotonic clock and a timer, injected so that unit tests drive them. */
export interface BufferClock {
  now(): number;
  after(ms: number, fn: () => void): unknown;
  cancel(timer: unknown): void;
}

export const monotonicClock: BufferClock = {
  now: () => performance.now(),
  // unref: a pending give-back alone must not keep a stopping process alive.
  after: (ms, fn) => setTimeout(fn, ms).unref(),
  cancel: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};

/**
 * The jobs of one queue claimed on this instance and not started yet: leased, heartbeated, waiting
 * for a free slot. It sizes each claim, hands jobs out oldest first, and gives back unstarted (no
 * attempt spent) those that waited too long: past `bufferWaitLimit` of the deadline, or, for a
 * rate-limited queue (with or without prefetch), past its entry wait D (`rateEntryWait`), checked
 * again right before the handler is entered (`lateToEnter`). A rate-limited queue's claims follow a
 * RateClaimAllowance (what starts in time lets it grow, a give-back shrinks it), and its entry wait a
 * RateEntryWait (a give-back lengthens it, so that a slow round trip still starts jobs).
 */
export class PrefetchBuffer<J extends BufferedJob> {
  private readonly jobs: J[] = [];
  /** How long after its claim was sent a job may start: a rate-limited queue's first entry wait, else the buffer's. */
  readonly waitLimit: number;
  /** A rate-limited queue's entry wait, as it adapts. */
  private readonly entryWait: RateEntryWait | undefined;
  private readonly keepDeadline: number;
  private readonly rate: RateClaimAllowance | undefined;
  /** When the next claim goes out (not rate-limited: the rate allowance sizes those claims). */
  private readonly refill: RefillPoint | undefined;
  /** Jobs were given back for waiting too long: claim no more than free slots until a slot frees. */
  private stale = false;
  /** Rate-limited: jobs of a claim waited here; once all started in time, the allowance may grow. */
  private rateBuffered = false;
  /** A job went back late since the last claim's jobs arrived: that claim does not grow the allowance. */
  private lateSinceClaim = false;
  /** A rate-limited queue claims no sooner than this: see RateClaimAllowance.pause. */
  private claimNotBefore = 0;
  private expiryTimer: unknown;
  /** The clock as read by the last expire() (or, rate-limited, take()): a pump reads it once per start check. */
  private now = 0;
  private readonly due = () => this.owner.pump();

  constructor(
    private readonly limits: BufferLimits,
    private readonly owner: BufferOwner<J>,
    private readonly clock: BufferClock = monotonicClock,
  ) {
    const entryWait = rateEntryWait(limits.rateLimit, limits.deadlineDuration);
    this.waitLimit = entryWait > 0 ? entryWait : bufferWaitLimit(limits.deadlineDuration);
    this.rate =
      entryWait > 0
        ? new RateClaimAllowance(limits.concurrency, limits.prefetch, entryWait, limits.pollInterval)
        : undefined;
    this.entryWait =
      entryWait > 0 && limits.rateLimit
        ? new RateEntryWait(entryWait, rateEntryWaitMax(limits.rateLimit, limits.deadlineDuration))
        : undefined;
    this.keepDeadline = keepDeadlineWithin(limits.deadlineDuration);
    this.refill = this.rate ? undefined : new RefillPoint(limits.concurrency);
  }

  get size(): number {
    return this.jobs.length;
  }

  /** How long after it is sent the next claim's jobs may start (see RateEntryWait): send the claim with it. */
  get nextEntryWait(): number {
    return this.entryWait ? this.entryWait.current : this.waitLimit;
  }

  /** How long the next claim must wait (≤ 0: none): a rate-limited queue pauses after give-backs. */
  claimPause(): number {
    return this.rate ? this.claimNotBefore - this.clock.now() : 0;
  }

  /** A claim returned `rows` jobs after `ms`: see RefillPoint, and RateEntryWait.roundTrip. */
  claimReturned(rows: number, ms: number): void {
    this.refill?.claimReturned(rows, ms);
    this.entryWait?.roundTrip(ms);
  }

  /** A handler settled after `ms`: see RefillPoint. */
  handlerSettled(ms: number): void {
    this.refill?.handlerSettled(ms);
  }

  /**
   * How many jobs the next claim may take (≤ 0: none now), with `running` handlers and `writing`
   * results still to be written. None while the buffer holds more than its refill point (RefillPoint:
   * half the prefetch, lower where the claims are the bottleneck). A rate-limited queue buffers only
   * what starts in time, else its limit is spent for nothing. Backpressure: each settled handler's
   * unwritten result still holds a lease, so results waiting for the writer count against an allowance
   * of the same size as the slots and buffer: claims never run ahead of a writer that cannot keep up.
   */
  claimSize(running: number, writing: number): number {
    const { concurrency } = this.limits;
    const prefetch = this.prefetch;
    const held = running + this.jobs.length;
    const want = Math.min(
      concurrency + prefetch - held,
      2 * (concurrency + prefetch) - held - writing,
      this.rate ? this.rate.claim : Infinity,
    );
    return this.jobs.length > this.refillAt(prefetch) ? 0 : want;
  }

  /**
   * Whether it holds more than its refill point, so that claimSize() would say 0 whatever the slots:
   * a cheap check before a claim is even tried (every freed slot asks for one).
   */
  get aboveRefill(): boolean {
    return this.jobs.length > this.refillAt(this.prefetch);
  }

  /** Jobs it may hold beyond the free slots: none after a late give-back, else the rate allowance's or the queue's. */
  private get prefetch(): number {
    return this.stale ? 0 : this.rate ? this.rate.prefetch : this.limits.prefetch;
  }

  private refillAt(prefetch: number): number {
    return this.refill ? this.refill.level(prefetch) : prefetch / 2;
  }

  /**
   * A claimed job waits here until take() hands it out, or it is cancelled or lost (owner.dropped).
   * `entryWait`: what its claim was sent with (read nextEntryWait before the claim).
   */
  add(job: J, entryWait = this.nextEntryWait): void {
    job.enterWithin = entryWait;
    job.bufferedIn = this; // a reference, not a closure per job
    this.jobs.push(job);
    this.lateSinceClaim = false;
  }

  /**
   * After a claim's jobs were added and offered to the free slots: a rate-limited queue's allowance
   * grows when a full claim's jobs all started at once, none given back.
   */
  claimed(full: boolean): void {
    if (!this.rate) return;
    if (this.jobs.length > 0) this.rateBuffered = true;
    else if (full && !this.lateSinceClaim) this.allStarted(); // more may start in time
  }

  /**
   * Gives back, unstarted, the jobs that waited longer than the wait limit (the oldest are first).
   * Until a slot frees, claims then take no more than the free slots, so hung slots do not claim the
   * same jobs again and again.
   */
  expire(): void {
    if (this.jobs.length === 0) return;
    const now = (this.now = this.clock.now());
    let late = 0;
    while (late < this.jobs.length && this.tooLate(this.jobs[late]!, now)) late++;
    if (late === 0) return;
    const jobs = this.jobs.splice(0, late);
    for (const job of jobs) job.bufferedIn = undefined;
    this.gaveBackLate(jobs);
  }

  /**
   * The next job to start (the oldest), or undefined. Call expire() first. A rate-limited queue's job
   * is checked on the clock at each take, as the handlers started before it took time (enter checks
   * again, right before the handler's call; this gives the late ones back in one statement).
   */
  take(): J | undefined {
    if (this.rate) {
      for (;;) {
        this.now = this.clock.now();
        if (this.jobs.length === 0 || !this.tooLate(this.jobs[0]!, this.now)) break;
        this.expire();
      }
    }
    const job = this.jobs.shift();
    if (job) {
      job.bufferedIn = undefined;
      this.entryWait?.entered(this.now - job.claimedAt);
    }
    return job;
  }

  /**
   * Whether the job just taken waited long enough for its lease deadline to move to start + deadline
   * (the wait is not charged); a short wait leaves it as claimed, which saves a write.
   */
  movesDeadline(job: J): boolean {
    return this.limits.deadlineDuration > 0 && this.now - job.claimedAt > this.keepDeadline;
  }

  /**
   * After a pump: a rate-limited buffer emptied of jobs that all started in time may grow; jobs left in
   * it are given back once their wait is over (owner.pump), not at the next poll, to free their leases.
   */
  pumped(): void {
    if (!this.rate) return;
    this.clock.cancel(this.expiryTimer);
    if (this.jobs.length === 0) {
      if (this.rateBuffered) this.allStarted();
      this.rateBuffered = false;
      return;
    }
    const dueIn = this.jobs[0]!.claimedAt + this.jobs[0]!.enterWithin - this.clock.now();
    this.expiryTimer = this.clock.after(Math.max(1, Math.ceil(dueIn)), this.due);
  }

  /**
   * Right before a handler is entered: a rate-limited job past its entry wait (a stall since its claim
   * was sent) must not start, as the claim's log counted only that wait.
   */
  lateToEnter(job: J): boolean {
    return this.rate !== undefined && this.tooLate(job, this.clock.now());
  }

  /** Gives back jobs that waited past the wait limit (also one not entered in time): see expire(). */
  gaveBackLate(jobs: J[]): void {
    this.stale = true;
    this.lateSinceClaim = true;
    if (this.rate) {
      this.rate.gaveBack();
      this.entryWait?.late(jobs.reduce((most, j) => Math.max(most, j.enterWithin), 0));
      this.rateBuffered = false;
      this.claimNotBefore = this.clock.now() + this.rate.pause;
    }
    this.owner.giveBack(jobs);
  }

  /** A slot freed: claims may fill the buffer again. */
  slotFreed(): void {
    this.stale = false;
  }

  /** Shutdown: takes out every job not started (to be given back) and stops the give-back timer. */
  drain(): J[] {
    this.clock.cancel(this.expiryTimer);
    const jobs = this.jobs.splice(0);
    for (const job of jobs) job.bufferedIn = undefined;
    return jobs;
  }

  private tooLate(job: J, now: number): boolean {
    return now - job.claimedAt > job.enterWithin;
  }

  private allStarted(): void {
    this.rate?.allStarted();
    this.entryWait?.allStarted();
  }

  /** A buffered job was cancelled or lost its lease. */
  leave(job: J): void {
    const at = this.jobs.indexOf(job);
    if (at < 0) return;
    this.jobs.splice(at, 1);
    job.bufferedIn = undefined;
    this.owner.dropped(job);
  }
}
