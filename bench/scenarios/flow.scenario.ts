import type { EnqueueManyItem, QueueOptions } from 'nestjs-awa';
import { createBenchApp, effectiveOptions } from '../support/bench.app.js';
import type { BenchDatabase } from '../support/bench.database.js';
import { gatedDrain } from '../support/bench.drain.js';
import { DbObserver } from '../support/bench.observer.js';
import { now } from '../support/bench.progress.js';
import { once } from '../support/bench.repeat.js';
import { r2 } from '../support/bench.report.js';
import type { Scenario, ScenarioContext } from './scenario.js';

interface FlowRun {
  label: string;
  queue: QueueOptions;
  /** Enqueue options of job i. */
  options?: (i: number) => Omit<EnqueueManyItem, 'kind' | 'args'>;
}

const HEADLINE: QueueOptions = { concurrency: 24, prefetch: 500 };
const KEYS = 1_000;
const TARGET_RATE = 2_000;

/**
 * Flow control (issue 9), each run on a fresh database, one instance in the bench process: the plain
 * drain (headline profile, and without prefetch for reference), the drain with
 * 1,000 keys and keyConcurrency 5, the drain under a rate limit far above what the machine does, and
 * the rate achieved against a limit of 2,000/s. Figures only: ratios are for the reader.
 */
const RUNS: FlowRun[] = [
  { label: 'plain drain, c=24, prefetch=500', queue: HEADLINE },
  { label: 'plain drain, c=24, prefetch=0', queue: { ...HEADLINE, prefetch: 0 } },
  {
    label: `${KEYS} keys, keyConcurrency 5, c=24, prefetch=500`,
    queue: { ...HEADLINE, keyConcurrency: 5 },
    options: (i) => ({ concurrencyKey: `tenant-${i % KEYS}` }),
  },
  {
    label: 'rateLimit 1,000,000/s (above capacity), c=24',
    queue: { ...HEADLINE, rateLimit: { limit: 1_000_000, period: 1_000 } },
  },
  {
    label: `rateLimit ${TARGET_RATE}/s, c=24`,
    queue: { ...HEADLINE, rateLimit: { limit: TARGET_RATE, period: 1_000 } },
  },
];

/**
 * The rate a limited run achieved, on the limiter's clock (attempted_at, the claim's stamp):
 * `busiest_window`, the most starts in one window [x, x + period) (the limit bounds it); and
 * `sustained_per_s`, the least-squares slope of the start count over time, for the starts after the
 * first window. The first window is left out: its burst is free (the log starts empty). A slope, not
 * starts over a span: a limited drain starts in bursts, one each time the log frees room, and any span
 * that begins or ends at a burst miscounts it; the slope of an even staircase is its rate exactly.
 */
async function rateFigures(observer: DbObserver, periodMs: number) {
  const [row] = await observer.query<{ busiest: number; slope: number | null; starts: number }>(
    `WITH s AS (
       SELECT attempted_at AS a,
              count(*) OVER (ORDER BY attempted_at RANGE BETWEEN CURRENT ROW AND $1::float8 * interval '1 millisecond'
                             - interval '1 microsecond' FOLLOWING) AS n
         FROM awa.all_jobs WHERE attempted_at IS NOT NULL
     ), later AS (
       SELECT extract(epoch FROM a)::float8 AS at, row_number() OVER (ORDER BY a) AS i
         FROM s WHERE a >= (SELECT min(a) FROM s) + $1::float8 * interval '1 millisecond'
     )
     SELECT (SELECT max(n)::int FROM s) AS busiest, regr_slope(i, at) AS slope, count(*)::int AS starts FROM later`,
    [periodMs],
  );
  // Claims given back unstarted (they spent the limit, and ran later): one error entry each.
  const [back] = await observer.query<{ n: number }>(
    `SELECT coalesce(sum(jsonb_array_length(errors)), 0)::int AS n FROM awa.all_jobs`,
  );
  return {
    period_ms: periodMs,
    busiest_window: row?.busiest ?? 0,
    sustained_per_s: Math.round(row?.slope ?? 0),
    sustained_starts: row?.starts ?? 0,
    given_back: back?.n ?? 0,
  };
}

async function drain(ctx: ScenarioContext, db: BenchDatabase, run: FlowRun): Promise<void> {
  const { app, hooks } = await createBenchApp(db.url, { queues: { default: run.queue } }, true);
  const close = once(() => app.close());
  ctx.defer(close);
  const observer = new DbObserver(db.url);
  const end = once(() => observer.end());
  ctx.defer(end);
  try {
    await observer.connect();
    const result = await gatedDrain({
      producer: app,
      observer,
      n: ctx.config.n,
      chunk: ctx.config.enqueueChunk,
      handled: () => hooks.handled,
      timeoutMs: ctx.config.scenarioTimeoutMs,
      log: ctx.log,
      options: run.options,
    });
    const value = Math.round(result.completedInDb / (result.ms / 1000));
    const rate = run.queue.rateLimit ? await rateFigures(observer, run.queue.rateLimit.period) : undefined;
    const rateText = rate
      ? `, busiest ${rate.period_ms} ms window ${rate.busiest_window}, sustained ${rate.sustained_per_s}/s`
      : '';
    ctx.log(`  ${run.label}: ${value} jobs/s (${r2(result.ms)} ms)${rateText}`);
    ctx.figure({
      metric: 'flow_jobs_per_s',
      value,
      n: ctx.config.n,
      unit: 'jobs/s',
      config: {
        label: run.label,
        awa: effectiveOptions(app),
        ms: r2(result.ms),
        ok: result.ok,
        ...(run.queue.rateLimit ? { rate_limit_per_s: run.queue.rateLimit.limit, ...rate } : {}),
      },
    });
  } finally {
    await end();
    await close();
  }
}

export const flowScenario: Scenario = {
  id: 'flow',
  title: 'flow control: key concurrency and rate limits beside the plain drain',
  timeoutMs: 900_000,
  run: async (ctx) => {
    const started = now();
    for (const run of RUNS) {
      if (ctx.abandoned) break;
      const db = await ctx.database();
      await drain(ctx, db, run);
      await db.drop();
    }
    ctx.log(`  flow runs took ${Math.round(now() - started)} ms`);
  },
};
