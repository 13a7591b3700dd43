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
