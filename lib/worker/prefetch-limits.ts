/** How long a job may wait in a queue's prefetch buffer, and what that wait costs its deadline. */

/**
 * How long a prefetched job may wait in the buffer before it is given back unstarted (released, no
 * attempt spent): its deadline minus min(half of it, 10 s), which leaves its lease, claimed with
 * deadline_at = claim + deadline, room to be moved to start + deadline when it starts. Without a
 * deadline, 60 s: slots hung for longer should not hoard jobs other instances could run.
 */
export function bufferWaitLimit(deadlineMs: number): number {
  return deadlineMs > 0 ? deadlineMs - Math.min(deadlineMs / 2, 10_000) : 60_000;
}

/**
 * A wait in the buffer up to 1% of the deadline (at most 1 s) leaves the lease deadline as claimed:
 * in a fast drain most jobs wait a few ms, and moving each deadline would cost a write per batch.
 */
export const keepDeadlineWithin = (deadlineMs: number) => Math.min(deadlineMs / 100, 1_000);

/** The least entry wait of a rate-limited queue: a claim's round trip and dispatch must fit in it. */
export const MIN_RATE_ENTRY_WAIT_MS = 10;

/**
 * How long after its claim was sent a rate-limited queue's job may still be started (its handler
 * entered), with or without prefetch, to begin with (RateEntryWait lengthens it where claims cannot be
 * entered that fast): past it, it is given back unstarted (no attempt spent). The claim
 * counts its rate log over period + this (see rateLogExtension and awa.claim_flow), so that handler
 * starts, not only claims, keep to `limit` per `period`: the starts of [w, w + period) were claimed in
 * (w - wait, w + period), one window of the log. period / 40, at least 10 ms (a claim's round trip),
 * within the buffer's own limit: it costs the sustained rate limit × period / (period + wait), 2.5%
 * from a period of 400 ms up. 0 without a rate limit.
 *
 * Clocks: the wait is timed on this process's monotonic clock from before the claim is sent, so from
 * no later than the claim's stamp t (the database's clock_timestamp(), read after the queue row's lock),
 * and no two machines' clocks are ever compared: the guarantee holds on the database's clock (at most
 * `limit` entries in any window of it), whatever skew the instances' wall clocks have. Assumed: the
 * clocks run at the real rate (NTP slews of a few hundred ppm are in the 1 ms slack) and the database's
 * does not step. Entry times read from several machines' wall clocks can show their skew as excess.
 */
export function rateEntryWait(rate: { period: number } | null, deadlineMs: number): number {
  if (!rate) return 0;
  return Math.min(Math.max(rate.period / 40, MIN_RATE_ENTRY_WAIT_MS), bufferWaitLimit(deadlineMs));
}

/**
 * What is left between the entry check (on the clock, right before the handler is called) and the
 * handler's first statement: synchronous code only (the 'started' observers, the trace span), so
 * microseconds; the claim's window is widened by this much more than the entry wait to cover it.
 */
export const ENTRY_CHECK_SLACK_MS = 1;

/**
 * What awa.claim_flow adds to the rate limit's period for the log entry (p_buffer_ms) of a claim sent
 * with entry wait `wait` (0: no rate limit).
 */
export function rateLogExtension(wait: number): number {
  return wait > 0 ? wait + ENTRY_CHECK_SLACK_MS : 0;
}

/**
 * The longest a rate-limited queue's entry wait may grow to (see RateEntryWait): the period, at least
 * 1 s, within the buffer's own limit. At most it halves the sustained rate of a period of 1 s or more.
 */
export function rateEntryWaitMax(rate: { period: number }, deadlineMs: number): number {
  const base = rateEntryWait(rate, deadlineMs);
  return Math.max(base, Math.min(Math.max(rate.period, 1_000), bufferWaitLimit(deadlineMs)));
}

/**
 * A rate-limited queue's entry wait, fitted to what this instance can do. It starts at rateEntryWait
 * (period / 40, at least 10 ms) and doubles, up to rateEntryWaitMax, each time a job claimed with the
 * current wait could not be entered within it (a slow round trip to the database, a busy event loop):
 * a fixed wait shorter than the claim's round trip would give back every job and start none. Every
 * claim's round trip, with jobs or without, is a floor for its jobs' entries: one longer than half the
 * wait lengthens it at once to twice the round trip, before a claim's jobs go back for it (each claim
 * given back spends its part of the fleet's limit for nothing). Once a claim's jobs all start in time,
 * it eases back toward twice the slowest entry or round trip seen since, never under the base. Each
 * claim is sent with the wait it is held to (awa.claim_flow logs that claim over period + its own
 * wait), so a change never weakens the limit; a longer wait costs sustained rate,
 * limit × period / (period + wait).
 */
export class RateEntryWait {
  private value: number;
  private slowest = 0;

  constructor(
    readonly base: number,
    readonly max: number,
  ) {
    this.value = base;
  }

  /** The wait the next claim is sent with. */
  get current(): number {
    return this.value;
  }

  /** A job was taken to be entered `ms` after its claim was sent. */
  entered(ms: number): void {
    if (ms > this.slowest) this.slowest = ms;
  }

  /** A claim came back `ms` after it was sent, with jobs or without: none of its jobs could start sooner. */
  roundTrip(ms: number): void {
    this.entered(ms);
    if (2 * ms > this.value) this.value = Math.min(this.max, 2 * ms);
  }

  /** A job claimed with wait `claimWait` went back, not entered within it. */
  late(claimWait: number): void {
    // A job claimed before the last doubling says nothing new about the current wait.
    if (claimWait >= this.value) this.value = Math.min(this.max, 2 * this.value);
    this.slowest = 0;
  }

  /** A claim's jobs all started in time: toward twice the slowest entry (at once when that is longer). */
  allStarted(): void {
    const target = Math.min(this.max, Math.max(this.base, 2 * this.slowest));
    this.value = target >= this.value ? target : this.value - (this.value - target) / 4;
    this.slowest = 0;
  }
}

/**
 * How many jobs a rate-limited queue may claim beyond its free slots (from 0 up to `prefetch`), or, once
 * that is 0, of its free slots (from 1 up to `concurrency`). Every claimed job spends the rate limit,
 * also one given back for not being entered within the wait: so the allowance halves when jobs were
 * given back, and grows by an eighth (at least 1, up to `max`) when a claim's jobs all started in time.
 * The slow growth makes give-backs rare once it found what starts in time.
 */
export class RateBufferAllowance {
  private value: number;

  constructor(
    private readonly max: number,
    private readonly min = 0,
  ) {
    this.value = max;
  }

  get current(): number {
    return this.value;
  }

  /** Every buffered job started within the wait (or a claim without buffer filled every free slot). */
  allStarted(): void {
    this.value = Math.min(this.max, this.value + Math.max(1, Math.ceil(this.value / 8)));
  }

  /** Buffered jobs were given back, their part of the rate limit spent for nothing. */
  gaveBack(): void {
    this.value = Math.max(this.min, Math.floor(this.value / 2));
  }
}

/**
 * How much a rate-limited queue may claim at once: its prefetch allowance (beyond the free slots) and,
 * once that is 0, a slot allowance (at least 1, up to `concurrency`). A give-back shrinks the prefetch
 * allowance first, then the slots; all started in time grows the slots back first, then the prefetch.
 * An instance whose claims cannot be entered in time (a busy event loop) soon claims one job at a
 * time, and then, while even that one goes back, pauses between claims (from `minPauseMs`, doubling, up
 * to `maxPauseMs`): it spends little of the fleet's limit on jobs it gives back.
 */
export class RateClaimAllowance {
  private readonly slots: RateBufferAllowance;
  private readonly beyond: RateBufferAllowance;
  private pauseMs = 0;

  constructor(
    private readonly concurrency: number,
    prefetch: number,
    private readonly minPauseMs: number,
    private readonly maxPauseMs: number,
  ) {
    this.slots = new RateBufferAllowance(concurrency, 1);
    this.beyond = new RateBufferAllowance(prefetch);
  }

  /** How long to wait before the next claim: 0 unless claims of one job went back in a row. */
  get pause(): number {
    return this.pauseMs;
  }

  /** Jobs it may claim beyond its free slots. */
  get prefetch(): number {
    return this.beyond.current;
  }

  /** The most one claim may take. */
  get claim(): number {
    return this.slots.current + this.beyond.current;
  }

  allStarted(): void {
    this.pauseMs = 0;
    if (this.slots.current < this.concurrency) this.slots.allStarted();
    else this.beyond.allStarted();
  }

  gaveBack(): void {
    if (this.claim === 1) this.pauseMs = Math.min(this.maxPauseMs, Math.max(this.minPauseMs, 2 * this.pauseMs));
    else if (this.beyond.current > 0) this.beyond.gaveBack();
    else this.slots.gaveBack();
  }
}
