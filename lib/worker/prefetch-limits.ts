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

/**
 * How long a rate-limited queue's prefetched job may wait, from the moment its claim was sent, before
 * it must start or be given back unstarted: the claim counts its rate log over period + this, so that
 * starts, not only claims, keep to `limit` per `period` (see awa.claim_flow). 1/40 of the period costs
 * the sustained rate 2.5% (limit × period / (period + wait)); within the buffer's own limit. Without
 * prefetch (or rate limit) 0: the claim starts its jobs and counts over the period alone.
 */
export function rateBufferWait(rate: { period: number } | null, prefetch: number, deadlineMs: number): number {
  if (!rate || prefetch <= 0) return 0;
  return Math.min(rate.period / 40, bufferWaitLimit(deadlineMs));
}

/**
 * How many jobs a rate-limited queue may claim beyond its free slots. Every claimed job spends the
 * rate limit, also one given back for not starting within the wait: so the allowance halves when jobs
 * were given back, and grows by an eighth (at least 1, up to `prefetch`) when a claim's buffered jobs
 * all started in time. The slow growth makes give-backs rare once it found what starts in time.
 */
export class RateBufferAllowance {
  private value: number;

  constructor(private readonly prefetch: number) {
    this.value = prefetch;
  }

  get current(): number {
    return this.value;
  }

  /** Every buffered job started within the wait (or a claim without buffer filled every free slot). */
  allStarted(): void {
    this.value = Math.min(this.prefetch, this.value + Math.max(1, Math.ceil(this.value / 8)));
  }

  /** Buffered jobs were given back, their part of the rate limit spent for nothing. */
  gaveBack(): void {
    this.value = Math.floor(this.value / 2);
  }
}
