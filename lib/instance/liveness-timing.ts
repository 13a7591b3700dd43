/** First wait before the session reconnects; it doubles on each failed attempt, up to MAX_RECONNECT_DELAY_MS. */
export const FIRST_RECONNECT_DELAY_MS = 100;

/** Time allowed for the first reconnect attempt to connect, take the lock and re-register. */
const RECONNECT_MARGIN_MS = 500;

export interface LivenessTiming {
  /** How often an instance checks its own session (`SELECT 1`), leader or not. */
  probeInterval: number;
  /** A probe unanswered for this long means the session is gone. */
  probeTimeout: number;
  /**
   * How long the leader sees an instance's liveness lock missing before it counts it dead: longer
   * than a live instance needs to notice a lost session (a probe interval plus its timeout) and
   * re-take its lock on a new one.
   */
  confirmAfter: number;
}

/** Derived from orphanSweepInterval, so that one option moves detection and confirmation together. */
export function livenessTiming(orphanSweepInterval: number): LivenessTiming {
  const probeInterval = Math.max(orphanSweepInterval / 4, 100);
  const probeTimeout = Math.max(orphanSweepInterval / 4, 1_000);
  return {
    probeInterval,
    probeTimeout,
    confirmAfter: probeInterval + probeTimeout + FIRST_RECONNECT_DELAY_MS + RECONNECT_MARGIN_MS,
  };
}
