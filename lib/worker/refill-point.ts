/**
 * When a queue with prefetch sends its next claim: once its buffer is down to `level()` jobs.
 *
 * A claim costs a fixed part (a round trip, planning, a commit: a few ms on a busy 2-core machine) plus
 * a little per job, so larger claims cost the database less per job. Claiming at half the prefetch
 * keeps the buffer from running dry while a claim is in flight, but where handlers drain the buffer
 * far faster than claims fill it (short jobs on a long drain), the buffer runs dry anyway and the
 * instance is bound by its claims: there, claiming later makes each claim larger and the drain faster
 * (sitting L in docs/performance.md: 200,000 no-op jobs). Where handlers are the bottleneck (they wait
 * on I/O), the level stays high enough for the buffer to outlast a claim's round trip.
 *
 * It models both sides from what it sees: the handlers' capacity (concurrency over their mean duration,
 * jobs per ms) and the claims' supply (jobs per ms of claim round trip).
 * - Claim-bound (capacity ≥ 4 × supply): the lowest level, a quarter of the prefetch.
 * - Otherwise: what the handlers would start during two claim round trips (timers and a busy event
 *   loop make both vary), between a quarter and half of the prefetch.
 * Until it has seen a claim and a handler: half, the level before it adapted.
 */
export class RefillPoint {
  /** Mean handler duration, ms (EWMA); NaN until a handler settled. */
  private handlerMs = Number.NaN;
  /** Mean claim round trip, ms, and mean rows per claim (EWMAs); NaN until a claim returned rows. */
  private claimMs = Number.NaN;
  private claimRows = Number.NaN;

  constructor(
    private readonly concurrency: number,
    /** How much each new sample weighs: handlers settle by the thousand, claims far less often. */
    private readonly handlerWeight = 1 / 64,
    private readonly claimWeight = 1 / 4,
  ) {}

  /** A handler settled after `ms`. */
  handlerSettled(ms: number): void {
    this.handlerMs = ewma(this.handlerMs, ms, this.handlerWeight);
  }

  /** A claim returned `rows` jobs after `ms` (one that found none says nothing of the supply). */
  claimReturned(rows: number, ms: number): void {
    if (rows === 0) return;
    this.claimMs = ewma(this.claimMs, ms, this.claimWeight);
    this.claimRows = ewma(this.claimRows, rows, this.claimWeight);
  }

  /** The buffer level at or below which the next claim goes out, for a buffer of `prefetch`. */
  level(prefetch: number): number {
    const highest = prefetch / 2;
    if (Number.isNaN(this.handlerMs) || Number.isNaN(this.claimMs)) return highest;
    const lowest = prefetch / 4;
    // A handler that settles at once still costs the event loop: 1 µs keeps the capacity finite.
    const capacity = this.concurrency / Math.max(this.handlerMs, 0.001);
    const supply = this.claimRows / Math.max(this.claimMs, 0.001);
    if (capacity >= 4 * supply) return lowest;
    return Math.min(highest, Math.max(lowest, 2 * capacity * this.claimMs));
  }
}

function ewma(mean: number, sample: number, weight: number): number {
  return Number.isNaN(mean) ? sample : mean + weight * (sample - mean);
}
