// The slow-network fault of the chaos run: every worker's connections to PostgreSQL get a latency (each
// way) for a while, as a database far from its instances or a congested link would give them. Claims
// of the rated queue then come back later than that queue's first entry wait, so the workers must fit
// their waits to them (RateEntryWait) to start any; the rate limit and every other invariant must hold.
import { setTimeout as sleep } from 'node:timers/promises';
import type { TcpProxy } from '../support/tcp-proxy.js';

export interface SlowNetworkRecord {
  /** When it began (JS clock). */
  at: Date;
  /** Seconds into the run (from the first enqueue). */
  atSeconds?: number;
  ms: number;
  /** Added to each packet's way, each direction. */
  latencyMs: number;
  /** Handler starts of the rated queue while the network was slow (see chaos-starts.ts). */
  ratedStarts?: number;
}

/**
 * Slows the connections of every worker's proxy (`proxies()`, read again at the end: a worker started
 * meanwhile is slowed too, from its next proxy on) by `latencyMs` each way for `ms`.
 */
export async function slowAll(
  proxies: () => TcpProxy[],
  ms: number,
  latencyMs: number,
  log: (line: string) => void,
): Promise<SlowNetworkRecord> {
  const at = new Date();
  const setAll = (latency: number) => proxies().forEach((proxy) => proxy.latency(latency));
  setAll(latencyMs);
  log(`chaos: every worker's connections delayed ${latencyMs} ms each way for ${ms} ms`);
  const until = Date.now() + ms;
  // Workers started meanwhile (replacing killed ones) get new proxies: slow them as they come.
  while (Date.now() < until) {
    await sleep(Math.min(250, until - Date.now()));
    if (Date.now() < until) setAll(latencyMs);
  }
  setAll(0);
  return { at, ms, latencyMs };
}
