import { DEFAULT_PROFILES, profileLabel, type QueueProfile } from '../support/bench.config.js';
import type { DrainRun } from '../support/bench.repeat.js';
import {
  drainInProcess,
  processLabel,
  recordCpu,
  recordDrains,
  recordMachineCpu,
  recordWal,
} from './process.scenario.js';
import type { Scenario, ScenarioContext } from './scenario.js';

/** The headline profile (c=24, prefetch 500), whatever BENCH_PROFILES says: the figure issue 18 follows. */
const PROFILE: QueueProfile = DEFAULT_PROFILES[0]!;

/** Its own bound: BENCH_REPEAT drains of 200,000 jobs outlast BENCH_SCENARIO_TIMEOUT_MS. */
const TIMEOUT_MS = 900_000;

/**
 * The headline drain, long: BENCH_LONG_N (200,000) no-op jobs, so that the worker's CPU per job
 * (the cost of each job in the instance, which the database shares the machine's cores with) is
 * measured over a run long enough to leave the start and the end out of it.
 */
export const processLongScenario: Scenario = {
  id: 'process-long',
  title: `process-long: ${profileLabel(PROFILE)}, BENCH_LONG_N jobs`,
  timeoutMs: TIMEOUT_MS,
  run: async (scenarioCtx) => {
    const ctx: ScenarioContext = Object.create(scenarioCtx, {
      config: { value: { ...scenarioCtx.config, n: scenarioCtx.config.longN } },
    });
    const runs: DrainRun[] = [];
    for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
      const db = await ctx.database();
      try {
        runs.push(await drainInProcess(ctx, db, PROFILE));
      } finally {
        await db.drop();
      }
    }
    const label = `${processLabel(PROFILE)}, long`;
    recordDrains(ctx, label, runs);
    recordCpu(ctx, label, runs);
    recordMachineCpu(ctx, label, runs);
    recordWal(ctx, label, runs);
  },
};
