// What the chaos runner and its worker processes agree on: kinds, queues, options, the side table.
// No Nest imports here: the runner loads this file too.
import type { AwaModuleOptions, QueueOptions, RateLimitOptions } from 'nestjs-awa';

/** Job kinds and the queue each one runs on. */
export const CHAOS_KINDS = {
  quick: { kind: 'chaos.quick', queue: 'fast' },
  flaky: { kind: 'chaos.flaky', queue: 'fast' },
  slow: { kind: 'chaos.slow', queue: 'slow' },
  hang: { kind: 'chaos.hang', queue: 'slow' },
  // Two kinds share the keyed queue; one worker slot handles keyedA only (two services, one keyed queue).
  keyedA: { kind: 'chaos.keyed.a', queue: 'keyed' },
  keyedB: { kind: 'chaos.keyed.b', queue: 'keyed' },
  rated: { kind: 'chaos.rated', queue: 'rated' },
  // Adds 1 to chaos.counter inside job.transaction: the counter must end equal to the completed ones.
  counted: { kind: 'chaos.counted', queue: 'fast' },
} as const;

/**
 * The workflow load: small diamond graphs (a, then b and c, then d) beside the plain jobs. A step runs
 * like a quick job; a failing step fails its only attempt, so its dependents end by their policy.
 */
export const CHAOS_STEP_KINDS = {
  step: { kind: 'chaos.step', queue: 'fast' },
  failing: { kind: 'chaos.step.fail', queue: 'fast' },
} as const;

/** The error entry of a step ended by its policy because a dependency did not complete (docs/workflows.md). */
export const DEPENDENCY_ENDED_ERROR = 'a dependency did not complete';

/** What chaos.step.fail throws (as a string), its only attempt. */
export const STEP_FAIL_ERROR = 'chaos: failing workflow step';

/** Args of a workflow step. `batch` (g<n>) lets the producer tell whether an ambiguous insert landed. */
export interface ChaosStepArgs {
  graph: number;
  ref: string;
  batch: string;
  ms: number;
}
export type ChaosKindName = keyof typeof CHAOS_KINDS;

/** Thrown (as a string) by chaos.flaky on its first attempt: the one documented handler error. */
export const FLAKY_ERROR = 'chaos: flaky handler fails its first attempt';

/** What chaos.counted throws when its job.transaction did not commit (a fault, not a refusal). */
export const COUNTED_ERROR = 'chaos: counted handler: job.transaction rolled back';

/** Hanging jobs never settle: each attempt ends at the slow queue's hard deadline, then they fail. */
export const HANG_MAX_ATTEMPTS = 2;

/** Args of every chaos job. `batch` lets the producer tell whether an ambiguous insert landed. */
export interface ChaosArgs {
  seq: number;
  batch: string;
  /** Handler run time in ms (quick, flaky, slow). */
  ms: number;
}

/** The keyed queue: at most KEY_CONCURRENCY leases per key, over CHAOS_KEYS keys. */
export const KEY_CONCURRENCY = 2;
export const CHAOS_KEYS = 6;

/**
 * The rated queue's limit, unless the run sets its own (ENV.rateLimit): below the rated jobs' share of
 * the default load (15% of 100 jobs/s), so that the queue is saturated and its claims take the whole
 * limit, where a late start shows.
 */
export const DEFAULT_RATE_LIMIT: RateLimitOptions = { limit: 14, period: 1_000 };

/** The rated queue's prefetch on the worker slot that prefetches (the others have none). */
export const RATED_PREFETCH = 10;

/**
 * What a worker process is, by its slot (a replacement takes its victim's slot): the last slot of
 * three or more handles keyedA but not keyedB, and slot 1 prefetches on the rated queue.
 */
export interface WorkerVariant {
  keyedB: boolean;
  ratedPrefetch: number;
}
export function workerVariant(slot: number, workers: number): WorkerVariant {
  return {
    keyedB: !(workers >= 3 && slot === workers - 1),
    ratedPrefetch: slot === 1 ? RATED_PREFETCH : 0,
  };
}

/**
 * Short intervals, so recovery happens many times per run. The slow queue's deadline is well above
 * the longest slow job, so only hanging jobs hit it (barring a stalled machine).
 */
const CHAOS_AWA_OPTIONS: AwaModuleOptions = {
  heartbeatInterval: 200,
  heartbeatStaleAfter: 1_500,
  maintenanceInterval: 300,
  orphanSweepInterval: 300,
  shutdownTimeout: 3_000,
  migrationsRun: true,
  // Finished jobs must stay for the invariant checks, and so must the durable events.
  retention: { completed: 0, failed: 0 },
  // A group held by a SIGKILLed worker moves on about as soon as its jobs do.
  jobEvents: { pollInterval: 100, leaseDuration: 1_500, retryBaseDelay: 50, retryMaxDelay: 500, retention: 0 },
  queues: {
    // handoff: single enqueues (every fourth batch, see paced) may go straight to an idle worker. The
    // second server's queue hands them off before their commit's flush (SECOND_QUEUE_OPTIONS).
    fast: {
      concurrency: 20,
      deadlineDuration: 5_000,
      retryBaseDelay: 50,
      retryMaxDelay: 500,
      pollInterval: 200,
      handoff: true,
    },
    slow: { concurrency: 10, deadlineDuration: 2_500, retryBaseDelay: 50, retryMaxDelay: 500, pollInterval: 200 },
  },
};

const FLOW_QUEUE = {
  concurrency: 10,
  deadlineDuration: 5_000,
  retryBaseDelay: 50,
  retryMaxDelay: 500,
  pollInterval: 200,
};

/** A worker's (or the producer's) options: the two plain queues, the keyed queue and the rated queue. */
export function chaosAwaOptions(rateLimit: RateLimitOptions, ratedPrefetch: number): AwaModuleOptions {
  return {
    ...CHAOS_AWA_OPTIONS,
    queues: {
      ...CHAOS_AWA_OPTIONS.queues,
      keyed: { ...FLOW_QUEUE, keyConcurrency: KEY_CONCURRENCY },
      rated: { ...FLOW_QUEUE, concurrency: 20, rateLimit, prefetch: ratedPrefetch },
    },
  };
}

/** Worker processes' environment. */
export const ENV = {
  url: 'CHAOS_URL',
  role: 'CHAOS_ROLE',
  /** Producer only: total jobs, jobs per second, batch size, and the kind mix (JSON). */
  jobs: 'CHAOS_JOBS',
  rate: 'CHAOS_RATE',
  batch: 'CHAOS_BATCH',
  mix: 'CHAOS_MIX',
  /** Workers: the slot's variant (JSON WorkerVariant). Everyone: the rated queue's limit (JSON). */
  variant: 'CHAOS_VARIANT',
  rateLimit: 'CHAOS_RATE_LIMIT',
  /** Producer only: one workflow graph after every this many batches (0: none). */
  graphEvery: 'CHAOS_GRAPH_EVERY',
  /** Workers: the directory where each process appends its handler starts (see chaos-starts.ts). */
  startsDir: 'CHAOS_STARTS_DIR',
  /** Everyone, with --second-server: the second server's database (the module SECOND_MODULE). */
  secondUrl: 'CHAOS_SECOND_URL',
  /** Producer only, with --second-server: the jobs to enqueue into the second server (at a rate of their own). */
  secondJobs: 'CHAOS_SECOND_JOBS',
  secondRate: 'CHAOS_SECOND_RATE',
} as const;

/**
 * The second server's load (--second-server): a named AwaModule on a DataSource of its own, with one
 * queue and kinds of its own (a kind has one handler in an app): quick, slow (so that attempts are in
 * flight when the server is killed) and counted (job.transaction on that server's DataSource).
 */
export const SECOND_MODULE = 'billing';
export const SECOND_DATA_SOURCE = 'billingDb';
export const SECOND_QUEUE = 'invoices';
export const SECOND_KINDS = {
  quick: 'chaos.billing.quick',
  slow: 'chaos.billing.slow',
  counted: 'chaos.billing.counted',
} as const;

/**
 * The second module's queue: like the plain fast queue, but with the eager handoff (docs/handoff.md),
 * on the server the run crashes: a crash in a handed job's flush window loses that job after its
 * handler may have started; its enqueue() fails and is made again (exactlyOnce), and every record of
 * its run on that server is lost with it (later in the log).
 */
export const SECOND_QUEUE_OPTIONS: QueueOptions = { ...CHAOS_AWA_OPTIONS.queues!.fast!, handoff: 'eager' };

/** The second module's options: the run's settings, its own name, DataSource and queue. */
export function secondAwaOptions(): AwaModuleOptions {
  return {
    ...CHAOS_AWA_OPTIONS,
    name: SECOND_MODULE,
    dataSource: SECOND_DATA_SOURCE,
    queues: { [SECOND_QUEUE]: SECOND_QUEUE_OPTIONS },
  };
}

/** Fractions of each kind among the jobs (the rest are quick). */
export type ChaosMix = Record<Exclude<ChaosKindName, 'quick'>, number>;
export const DEFAULT_MIX: ChaosMix = {
  flaky: 0.05,
  slow: 0.1,
  hang: 0.01,
  keyedA: 0.1,
  keyedB: 0.1,
  rated: 0.15,
  counted: 0.15,
};
