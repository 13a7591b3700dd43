/** Knobs of one bench run, from the environment (see bench/README.md). */
export interface BenchConfig {
  /** Jobs per process run and per batch enqueue. */
  n: number;
  /** Sequential enqueue() calls of the single-enqueue figure. */
  singleCalls: number;
  /** Jobs per enqueueMany() call of the batch figure. */
  enqueueChunk: number;
  /** Queue concurrency of the process runs; the first one is the headline config. */
  concurrencies: number[];
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
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${JSON.stringify(raw)}`);
  return n;
}

function list(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (!raw) return fallback;
  const values = raw.split(',').map((s) => Number(s.trim()));
  if (values.some((v) => !Number.isInteger(v) || v < 1)) throw new Error(`${name} must be a comma-separated list of positive integers`);
  return values;
}

export function readBenchConfig(): BenchConfig {
  return {
    n: int('N', 20_000),
    singleCalls: int('BENCH_SINGLE_CALLS', 2_000),
    enqueueChunk: int('BENCH_ENQUEUE_CHUNK', 5_000) || 5_000,
    concurrencies: list('BENCH_CONCURRENCY', [24, 500]),
    repeat: int('BENCH_REPEAT', 3) || 1,
    bigRows: int('BENCH_BIG_ROWS', 1_000_000),
    heartbeatLeases: int('BENCH_HEARTBEAT_LEASES', 10_000),
    heartbeatBatchSize: int('BENCH_HEARTBEAT_BATCH', 500) || 500,
    latencySamples: int('LAT_SAMPLES', 300),
    latencyWarmup: int('LAT_WARMUP', 30),
    latencyJitterMs: int('LAT_JITTER_MS', 10),
    scenarioTimeoutMs: int('BENCH_SCENARIO_TIMEOUT_MS', 180_000),
    only: process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',').map((s) => s.trim()).filter(Boolean) : undefined,
  };
}
