import { cpus } from 'node:os';
import type { DynamicModule } from '@nestjs/common';
import type { AwaModuleOptions } from 'nestjs-awa';
import { BENCH_POOL_LABEL, createBenchApp, effectiveOptions } from '../support/bench.app.js';
import { profileId, profileLabel, type QueueProfile } from '../support/bench.config.js';
import type { BenchDatabase } from '../support/bench.database.js';
import { gatedDrain } from '../support/bench.drain.js';
import { DbObserver } from '../support/bench.observer.js';
import { now } from '../support/bench.progress.js';
import { medianRun, once, type DrainRun } from '../support/bench.repeat.js';
import { r2 } from '../support/bench.report.js';
import { StatementCounter } from '../support/bench.statements.js';
import type { Scenario, ScenarioContext } from './scenario.js';

/** Queue options of every process run: only concurrency and prefetch vary; the rest are the defaults. */
export function processQueueOptions(profile: QueueProfile): AwaModuleOptions {
  return { queues: { default: { concurrency: profile.concurrency, prefetch: profile.prefetch } } };
}

export const processLabel = (profile: QueueProfile) => `1 instance, in-process, ${profileLabel(profile)}`;

/** Autovacuum runs of the awa tables so far (reported by the vacuum itself, so not delayed). */
async function autovacuums(observer: DbObserver): Promise<Record<string, number>> {
  const rows = await observer.query<{ relname: string; n: number }>(
    `SELECT relname, autovacuum_count::int AS n FROM pg_stat_user_tables WHERE ` +
      `schemaname = 'awa' AND relname IN ('jobs', 'active_leases')`,
  );
  return Object.fromEntries(rows.map((r) => [r.relname, r.n]));
}

/**
 * One drain of `n` pre-enqueued no-op jobs by one instance running in the bench process itself
 * (the peers bench also drains in the process that measures), on database `db`. The app is closed
 * before this returns.
 */
export async function drainInProcess(
  ctx: ScenarioContext,
  db: BenchDatabase,
  profile: QueueProfile,
  imports: DynamicModule[] = [],
  /** The kind of the drained jobs (default: bench.noop). */
  kind?: string,
): Promise<DrainRun> {
  const { config } = ctx;
  const bootStarted = now();
  const { app, hooks } = await createBenchApp(db.url, processQueueOptions(profile), true, undefined, imports);
  const close = once(() => app.close());
  ctx.defer(close);
  const bootMs = now() - bootStarted;
  const observer = new DbObserver(db.url);
  const end = once(() => observer.end());
  ctx.defer(end);
  try {
    await observer.connect();
    const vacuumsBefore = await autovacuums(observer);
    const statements = new StatementCounter().attach();
    const drain = await gatedDrain({
      producer: app,
      observer,
      n: config.n,
      chunk: config.enqueueChunk,
      handled: () => hooks.handled,
      timeoutMs: config.scenarioTimeoutMs,
      log: ctx.log,
      kind,
    });
    statements.detach();
    const vacuumsAfter = await autovacuums(observer);
    const value = Math.round(drain.completedInDb / (drain.ms / 1000));
    const pipeline = statements.pipeline();
    const machineCpuPerJob = drain.machineCpuUs === undefined ? undefined : r2(drain.machineCpuUs / config.n);
    ctx.log(
      `  ${value} jobs/s (${r2(drain.ms)} ms, boot ${Math.round(bootMs)} ms, ` +
        `${r2(drain.cpuUs / config.n)} µs CPU/job` +
        (machineCpuPerJob === undefined ? '' : ` of the machine's ${machineCpuPerJob}`) +
        `, ${Math.round(drain.walBytes / config.n)} WAL bytes/job), ` +
        `${statements.total} statements` +
        (pipeline
          ? `; claim / completion / both / neither in flight ${pipeline.claim_in_flight_pct} / ` +
            `${pipeline.completion_in_flight_pct} / ${pipeline.both_in_flight_pct} / ${pipeline.neither_in_flight_pct}%`
          : ''),
    );
    return {
      value,
      ok: drain.ok,
      config: {
        concurrency: profile.concurrency,
        prefetch: profile.prefetch,
        processes: 1,
        in_process: true,
        awa: effectiveOptions(app),
        pool: BENCH_POOL_LABEL,
        start: 'COMMIT of the pre-enqueued jobs (workers booted and idle)',
        ms: r2(drain.ms),
        cpu_us_per_job: r2(drain.cpuUs / config.n),
        machine_cpu_us_per_job: machineCpuPerJob,
        machine_busy_pct:
          drain.machineCpuUs === undefined
            ? undefined
            : Math.round((100 * drain.machineCpuUs) / (drain.ms * 1000 * cpus().length)),
        wal_bytes_per_job: Math.round(drain.walBytes / config.n),
        boot_ms: r2(bootMs),
        handled: drain.handled,
        completed_in_db: drain.completedInDb,
        ok: drain.ok,
        statements_per_1000_jobs: r2((statements.total / config.n) * 1000),
        statements: statements.summary(),
        pipeline,
        autovacuums_during_drain: Object.fromEntries(
          Object.entries(vacuumsAfter).map(([table, n]) => [table, n - (vacuumsBefore[table] ?? 0)]),
        ),
      },
    };
  } finally {
    await end();
    await close();
  }
}

/** Records the median of repeated drains as one figure. */
export function recordDrains(
  ctx: ScenarioContext,
  label: string,
  runs: DrainRun[],
  extra: Record<string, unknown> = {},
): number | undefined {
  if (runs.length === 0) return undefined;
  const { run, values } = medianRun(runs);
  ctx.figure({
    metric: 'process_jobs_per_s',
    value: run.value,
    n: ctx.config.n,
    unit: 'jobs/s',
    config: { label, ...run.config, ...extra, repeat: runs.length, runs: values, ok: runs.every((r) => r.ok) },
  });
  if (runs.length > 1) ctx.log(`  median ${run.value} jobs/s of ${values.join(', ')}`);
  return runs.every((r) => r.ok) ? run.value : undefined;
}

/** A per-job measure of every drain (a key of its config), recorded as the median over the repeats. */
interface PerJobMeasure {
  key: string;
  metric: string;
  unit: string;
  /** Its name in the progress line. */
  says: string;
}

const CPU_PER_JOB: PerJobMeasure = {
  key: 'cpu_us_per_job',
  metric: 'process_cpu_us_per_job',
  unit: 'µs/job',
  says: 'µs CPU/job',
};
const MACHINE_CPU_PER_JOB: PerJobMeasure = {
  key: 'machine_cpu_us_per_job',
  metric: 'process_machine_cpu_us_per_job',
  unit: 'µs/job',
  says: "µs of the machine's CPU/job",
};
const WAL_PER_JOB: PerJobMeasure = {
  key: 'wal_bytes_per_job',
  metric: 'process_wal_bytes_per_job',
  unit: 'bytes/job',
  says: 'WAL bytes/job',
};

function recordMedian(
  ctx: ScenarioContext,
  measure: PerJobMeasure,
  label: string,
  runs: DrainRun[],
  extra: Record<string, unknown>,
  prefix: string,
): void {
  const values = runs.map((r) => Number(r.config[measure.key])).filter((v) => !Number.isNaN(v));
  if (values.length === 0) return;
  const median = [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
  ctx.figure({
    metric: measure.metric,
    value: median,
    n: ctx.config.n,
    unit: measure.unit,
    config: { label, ...extra, repeat: runs.length, runs: values },
  });
  ctx.log(`  ${prefix}median ${median} ${measure.says} of ${values.join(', ')}`);
}

/**
 * The median CPU time per job of the bench process (the instance) over `runs`: the figure a shared
 * machine's load moves least (jobs/s swings with it). `prefix` starts the progress line.
 */
export function recordCpu(
  ctx: ScenarioContext,
  label: string,
  runs: DrainRun[],
  extra: Record<string, unknown> = {},
  prefix = '',
): void {
  recordMedian(ctx, CPU_PER_JOB, label, runs, extra, prefix);
}

/**
 * The median WAL the server wrote per job over `runs`: what the drain costs the disk and a replica's
 * stream, whatever the machine's load (jobs/s moves with it, this does not).
 */
export function recordWal(ctx: ScenarioContext, label: string, runs: DrainRun[]): void {
  recordMedian(ctx, WAL_PER_JOB, label, runs, {}, '');
}

/**
 * The median CPU time of the whole machine per job over `runs` (Linux): the instance's, the server's
 * and the kernel's. With the cores busy, the drain's rate is the cores' time over this; the instance's
 * share of it (recordCpu) is what the SQL floor's client does not spend.
 */
export function recordMachineCpu(ctx: ScenarioContext, label: string, runs: DrainRun[]): void {
  recordMedian(ctx, MACHINE_CPU_PER_JOB, label, runs, {}, '');
}

export function processScenario(profile: QueueProfile): Scenario {
  const label = processLabel(profile);
  return {
    id: `process-${profileId(profile)}`,
    title: `process: ${label}`,
    run: async (ctx) => {
      const runs: DrainRun[] = [];
      for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
        const db = await ctx.database(); // a fresh, empty database for every repeat
        runs.push(await drainInProcess(ctx, db, profile));
        await db.drop();
      }
      recordDrains(ctx, label, runs);
    },
  };
}
