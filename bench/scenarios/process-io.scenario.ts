import { DEFAULT_PROFILES, profileLabel, type QueueProfile } from '../support/bench.config.js';
import { BenchKinds, IO_WAIT_MS } from '../support/bench.handlers.js';
import type { DrainRun } from '../support/bench.repeat.js';
import { drainInProcess, processLabel, recordDrains } from './process.scenario.js';
import type { Scenario } from './scenario.js';

/** The headline profile (c=24, prefetch 500). */
const PROFILE: QueueProfile = DEFAULT_PROFILES[0]!;

/**
 * The headline drain with handlers that wait IO_WAIT_MS (1 ms) on a timer, as one waiting on a fast
 * service would: the handlers, not the claims, are the bottleneck. It keeps the other side of the
 * claim's refill point honest (RefillPoint claims later where claims are the bottleneck, and must not
 * let this buffer run dry): 24 slots of 1 ms cannot exceed 24,000 jobs/s.
 */
export const processIoScenario: Scenario = {
  id: 'process-io',
  title: `process-io: ${profileLabel(PROFILE)}, handlers wait ${IO_WAIT_MS} ms`,
  run: async (ctx) => {
    const runs: DrainRun[] = [];
    for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
      const db = await ctx.database();
      try {
        runs.push(await drainInProcess(ctx, db, PROFILE, [], BenchKinds.io));
      } finally {
        await db.drop();
      }
    }
    recordDrains(ctx, `${processLabel(PROFILE)}, handlers wait ${IO_WAIT_MS} ms`, runs);
  },
};
