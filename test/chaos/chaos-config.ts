// What the chaos runner and its worker processes agree on: kinds, queues, options, the side table.
// No Nest imports here: the runner loads this file too.
import type { AwaModuleOptions } from 'nestjs-awa';

/** Job kinds and the queue each one runs on. */
export const CHAOS_KINDS = {
  quick: { kind: 'chaos.quick', queue: 'fast' },
  flaky: { kind: 'chaos.flaky', queue: 'fast' },
  slow: { kind: 'chaos.slow', queue: 'slow' },
  hang: { kind: 'chaos.hang', queue: 'slow' },
} as const;
export type ChaosKindName = keyof typeof CHAOS_KINDS;

/** Thrown (as a string) by chaos.flaky on its first attempt: the one documented handler error. */
export const FLAKY_ERROR = 'chaos: flaky handler fails its first attempt';

/** Hanging jobs never settle: each attempt ends at the slow queue's hard deadline, then they fail. */
export const HANG_MAX_ATTEMPTS = 2;

/** Args of every chaos job. `batch` lets the producer tell whether an ambiguous insert landed. */
export interface ChaosArgs {
  seq: number;
  batch: string;
  /** Handler run time in ms (quick, flaky, slow). */
  ms: number;
}

/**
 * Short intervals, so recovery happens many times per run. The slow queue's deadline is well above
 * the longest slow job, so only hanging jobs hit it (barring a stalled machine).
 */
export const CHAOS_AWA_OPTIONS: AwaModuleOptions = {
  heartbeatInterval: 200,
  heartbeatStaleAfter: 1_500,
  maintenanceInterval: 300,
  orphanSweepInterval: 300,
  shutdownTimeout: 3_000,
  migrationsRun: true,
  // Finished jobs must stay for the invariant checks.
  retention: { completed: 0, failed: 0 },
  queues: {
    fast: { concurrency: 20, deadlineDuration: 5_000, retryBaseDelay: 50, retryMaxDelay: 500, pollInterval: 200 },
    slow: { concurrency: 10, deadlineDuration: 2_500, retryBaseDelay: 50, retryMaxDelay: 500, pollInterval: 200 },
  },
};

/** Worker processes' environment. */
export const ENV = {
  url: 'CHAOS_URL',
  role: 'CHAOS_ROLE',
  /** Producer only: total jobs, jobs per second, batch size, and the kind mix (JSON). */
  jobs: 'CHAOS_JOBS',
  rate: 'CHAOS_RATE',
  batch: 'CHAOS_BATCH',
  mix: 'CHAOS_MIX',
} as const;

/** Fractions of each kind among the jobs (the rest are quick). */
export type ChaosMix = Record<Exclude<ChaosKindName, 'quick'>, number>;
export const DEFAULT_MIX: ChaosMix = { flaky: 0.05, slow: 0.1, hang: 0.01 };
