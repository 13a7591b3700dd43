import { DEFAULT_PROFILES, profileLabel, type QueueProfile } from '../support/bench.config.js';
import { adminQuery } from '../support/bench.database.js';
import { BenchKinds, COUNTER_ROWS } from '../support/bench.handlers.js';
import type { DrainRun } from '../support/bench.repeat.js';
import { drainInProcess, processLabel, recordCpu, recordDrains } from './process.scenario.js';
import type { Scenario } from './scenario.js';

/** The headline profile (c=24, prefetch 500), as process-long. */
const PROFILE: QueueProfile = DEFAULT_PROFILES[0]!;

/**
 * The cost of job.transaction: the headline drain of N jobs whose handlers each add 1 to a counter
 * row (one of COUNTER_ROWS) inside job.transaction, so each completes in a transaction of its own
 * instead of a batch; the plain no-op drain in the same sitting, repeat by repeat, for the ratio.
 * The run is `ok` only if the counters add up to N exactly.
 */
export const transactionScenario: Scenario = {
  id: 'transaction',
  title: `transaction: ${profileLabel(PROFILE)}, job.transaction vs the plain drain`,
  run: async (ctx) => {
    const plain: DrainRun[] = [];
    const transactional: DrainRun[] = [];
    for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
      for (const kind of [BenchKinds.noop, BenchKinds.transaction]) {
        const db = await ctx.database();
        try {
          if (kind === BenchKinds.transaction) {
            await adminQuery(
              db.url,
              `CREATE TABLE public.bench_counter (id int PRIMARY KEY, n bigint NOT NULL);
               INSERT INTO public.bench_counter SELECT g, 0 FROM generate_series(0, ${COUNTER_ROWS - 1}) g`,
            );
          }
          ctx.log(`  ${kind === BenchKinds.noop ? 'plain' : 'job.transaction'} drain`);
          const run = await drainInProcess(ctx, db, PROFILE, [], kind);
          if (kind === BenchKinds.transaction) {
            const [{ total } = { total: '0' }] = await adminQuery<{ total: string }>(
              db.url,
              'SELECT sum(n)::text AS total FROM public.bench_counter',
            );
            run.ok &&= Number(total) === ctx.config.n;
            run.config.counter_total = Number(total);
            transactional.push(run);
          } else plain.push(run);
        } finally {
          await db.drop();
        }
      }
    }
    const label = processLabel(PROFILE);
    const plainValue = recordDrains(ctx, `${label}, plain (beside job.transaction)`, plain);
    const txLabel = `${label}, every handler in job.transaction (+1 on one of ${COUNTER_ROWS} rows)`;
    const txValue = recordDrains(ctx, txLabel, transactional, { counter_rows: COUNTER_ROWS });
    recordCpu(ctx, txLabel, transactional);
    if (plainValue && txValue)
      ctx.log(`  job.transaction drains at ${Math.round((txValue / plainValue) * 100)}% of plain`);
  },
};
