/**
 * Options of the `default` queue in a process run; everything else stays at its default.
 * `prefetch`: jobs claimed beyond the free slots and held leased in the instance's buffer.
 */
export interface QueueProfile {
  concurrency: number;
  prefetch: number;
}

/** Default profiles; the first is the headline one (graphile-worker's concurrentJobs 24 + localQueue 500). */
export const DEFAULT_PROFILES: readonly QueueProfile[] = [
  { concurrency: 24, prefetch: 500 },
  { concurrency: 24, prefetch: 0 },
  { concurrency: 500, prefetch: 0 },
];

/** `c=24, prefetch=500`: how labels, titles and the progress show a profile. */
export const profileLabel = (p: QueueProfile) => `c=${p.concurrency}, prefetch=${p.prefetch}`;

/** `c24-p500`: how scenario ids show a profile. */
export const profileId = (p: QueueProfile) => `c${p.concurrency}-p${p.prefetch}`;

/** Knobs of one bench run, from the environment (see bench/README.md). */
export interface BenchConfig {
  /** Jobs per process run and per batch enqueue. */
  n: number;
  /** Sequential enqueue() calls of the single-enqueue figure. */
  singleCalls: number;
  /** Jobs per enqueueMany() call of the batch figure. */
  enqueueChunk: number;
  /**
   * Queue profiles of the in-process runs; the first is the headline one (also used by the worker-process and big-table
   * runs).
   */
  profiles: QueueProfile[];
  /** Jobs per drain of the otel scenario: more than `n`, since it compares four modes whose gaps are small. */
  otelN: number;
  /** Jobs per drain of the process-long scenario: long enough for a steady CPU per job. */
  longN: number;
  /** Drains per process configuration; the figure is their median. */
  repeat: number;
  /** Finished rows seeded for the big-table run. */
  bigRows: number;
  /** Leases held for the heartbeat figure. */
  heartbeatLeases: number;
  heartbeatBatchSize: number;
  latencySamples: number;
  latencyWarmup: number;
  latencyJitterMs: number;
  /** Upper bound of one scenario, in ms; past it the scenario is abandoned and the bench goes on. */
  scenarioTimeoutMs: number;
  /** Only the scenarios named here (comma-separated ids), or all. */
  only: string[] | undefined;
}

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** `24:500,24:0,500` (concurrency:prefetch, a bare concurrency meaning prefetch 0). */
function profiles(name: string, fallback: readonly QueueProfile[]): QueueProfile[] {
  if (process.env.BENCH_CONCURRENCY) {
    throw new Error(
      `BENCH_CONCURRENCY is replaced by ${name} (concurrency:prefetch,...), e.g. ${name}=24:500,24:0,500:0`,
    );
  }
  const raw = process.env[name];
  if (!raw) return fallback.map((p) => ({ ...p }));
  return raw.split(',').map((item) => {
    const [c, p = '0', ...rest] = item.trim().split(':');
    const concurrency = Number(c);
    const prefetch = Number(p);
    if (
      rest.length > 0 ||
      !Number.isInteger(concurrency) ||
      concurrency < 1 ||
      !Number.isInteger(prefetch) ||
      prefetch < 0
    ) {
      throw new Error(
        `${name} must be a comma-separated list of concurrency:prefetch ` +
          `(concurrency >= 1, prefetch >= 0), got ${JSON.stringify(item)}`,
      );
    }
    return { concurrency, prefetch };
  });
}

export function readBenchConfig(): BenchConfig {
  return {
    n: int('N', 20_000),
    singleCalls: int('BENCH_SINGLE_CALLS', 2_000),
    enqueueChunk: int('BENCH_ENQUEUE_CHUNK', 5_000) || 5_000,
    profiles: profiles('BENCH_PROFILES', DEFAULT_PROFILES),
    otelN: int('BENCH_OTEL_N', 100_000) || 100_000,
    longN: int('BENCH_LONG_N', 200_000) || 200_000,
    repeat: int('BENCH_REPEAT', 3) || 1,
    bigRows: int('BENCH_BIG_ROWS', 1_000_000),
    heartbeatLeases: int('BENCH_HEARTBEAT_LEASES', 10_000),
    heartbeatBatchSize: int('BENCH_HEARTBEAT_BATCH', 500) || 500,
    latencySamples: int('LAT_SAMPLES', 300),
    latencyWarmup: int('LAT_WARMUP', 30),
    latencyJitterMs: int('LAT_JITTER_MS', 10),
    scenarioTimeoutMs: int('BENCH_SCENARIO_TIMEOUT_MS', 180_000),
    only: process.env.BENCH_ONLY
      ? process.env.BENCH_ONLY.split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : undefined,
  };
}
