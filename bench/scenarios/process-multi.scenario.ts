import { createBenchApp, effectiveOptions } from '../support/bench.app.js';
import { profileId, profileLabel, type QueueProfile } from '../support/bench.config.js';
import type { BenchDatabase } from '../support/bench.database.js';
import { gatedDrain } from '../support/bench.drain.js';
import { DbObserver } from '../support/bench.observer.js';
import { now } from '../support/bench.progress.js';
import { once, type DrainRun } from '../support/bench.repeat.js';
import { r2 } from '../support/bench.report.js';
import { BenchWorkerProcess } from '../support/bench.worker-process.js';
import { processQueueOptions, recordDrains } from './process.scenario.js';
import type { Scenario, ScenarioContext } from './scenario.js';

/**
 * One drain of `n` pre-enqueued no-op jobs by `processes` worker processes (bench/worker-app.ts).
 * The bench process enqueues through a producer-only instance (it runs no worker) and measures.
 */
async function drainWithProcesses(
  ctx: ScenarioContext,
  db: BenchDatabase,
  processes: number,
  profile: QueueProfile,
): Promise<DrainRun> {
  const { config } = ctx;
  // The producer boots first and applies the migrations, so the workers find the schema.
  const { app: producer } = await createBenchApp(db.url, processQueueOptions(profile), false);
  const closeProducer = once(() => producer.close());
  ctx.defer(closeProducer);
  const workers: BenchWorkerProcess[] = [];
  const stopWorkers = once(() => Promise.all(workers.map((w) => w.stop())));
  ctx.defer(stopWorkers);
  const observer = new DbObserver(db.url);
  const end = once(() => observer.end());
  ctx.defer(end);
  try {
    const bootStarted = now();
    for (let i = 0; i < processes; i++) workers.push(new BenchWorkerProcess(db.url, processQueueOptions(profile)));
    await Promise.all(workers.map((w) => w.whenReady(60_000)));
    const bootMs = now() - bootStarted;
    ctx.log(`  ${processes} worker process(es) ready in ${Math.round(bootMs)} ms`);
    await observer.connect();
    const handled = () => workers.reduce((sum, w) => sum + w.handled, 0);
    const drain = await gatedDrain({
      producer,
      observer,
      n: config.n,
      chunk: config.enqueueChunk,
      handled,
      timeoutMs: config.scenarioTimeoutMs,
      log: ctx.log,
    });
    const value = Math.round(drain.completedInDb / (drain.ms / 1000));
    ctx.log(`  ${value} jobs/s (${r2(drain.ms)} ms), per process: ${workers.map((w) => w.handled).join(' / ')}`);
    return {
      value,
      ok: drain.ok,
      config: {
        concurrency: profile.concurrency,
        prefetch: profile.prefetch,
        processes,
        in_process: false,
        awa: effectiveOptions(producer), // the workers get the same options
        pool: 'TypeORM/pg default (10) per process',
        start: 'COMMIT of the pre-enqueued jobs (workers booted and idle)',
        ms: r2(drain.ms),
        boot_ms: r2(bootMs),
        handled: drain.handled,
        handled_per_process: workers.map((w) => w.handled),
        completed_in_db: drain.completedInDb,
        ok: drain.ok,
      },
    };
  } finally {
    await end();
    await stopWorkers();
    await closeProducer();
  }
}

export function processMultiScenario(processes: number, profile: QueueProfile): Scenario {
  const label = `${processes} worker process${processes > 1 ? 'es' : ''}, ${profileLabel(profile)} each`;
  return {
    id: `process-${processes}proc-${profileId(profile)}`,
    title: `process: ${label}`,
    run: async (ctx) => {
      const runs: DrainRun[] = [];
      for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
        const db = await ctx.database();
        runs.push(await drainWithProcesses(ctx, db, processes, profile));
        await db.drop();
      }
      recordDrains(ctx, label, runs);
    },
  };
}
