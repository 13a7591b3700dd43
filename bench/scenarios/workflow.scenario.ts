import { QueueProducer, type GraphJob } from 'nestjs-awa';
import { createBenchApp, effectiveOptions, type BenchApp } from '../support/bench.app.js';
import { BenchKinds, type BenchHooks } from '../support/bench.handlers.js';
import { now, sleep } from '../support/bench.progress.js';
import { percentile, r2 } from '../support/bench.report.js';
import type { Scenario, ScenarioContext } from './scenario.js';

/** Children of the fan-in and fan-out; steps of the chain (issue 19's sizes). */
const FAN = 10_000;
const CHAIN = 1_000;
/** Plain enqueue -> start samples taken right after the chain (and warm-ups dropped). */
const PAIRED_SAMPLES = 200;
const PAIRED_WARMUP = 20;

/** Waits until the handlers have run `n` jobs; the elapsed ms since `t0`, or null past the timeout. */
async function handledBy(ctx: ScenarioContext, hooks: BenchHooks, n: number, t0: number): Promise<number | null> {
  const until = t0 + ctx.config.scenarioTimeoutMs;
  while (hooks.handled < n) {
    if (now() > until || ctx.abandoned) return null;
    await sleep(2);
  }
  return now() - t0;
}

/**
 * Workflows at scale (docs/workflows.md), each on an idle booted instance, timed from the enqueue's
 * return until the handlers ran every job: a fan-in (FAN children, then their parent) against a plain
 * drain of as many jobs, a fan-out (a root, then FAN dependents), and a chain of CHAIN steps (the
 * time from one step's start to the next one's: its dependency completes, in a batch, then the
 * dependent is claimed; p50/p99).
 */
export const workflowScenario: Scenario = {
  id: 'workflow',
  title: `workflow: fan-in and fan-out of ${FAN}, chain of ${CHAIN}`,
  run: async (ctx) => {
    const run = async (name: string, jobs: GraphJob[] | null, after?: (app: BenchApp) => Promise<void>) => {
      const db = await ctx.database();
      const { app, hooks } = await createBenchApp(db.url, {}, true);
      ctx.defer(() => app.close());
      const producer = app.get(QueueProducer);
      // Both kinds are inserted by one statement, and timed apart: the drain from its commit.
      const enqueuedAt = now();
      if (jobs) await producer.enqueueGraph(jobs);
      else
        await producer.enqueueMany(Array.from({ length: FAN + 1 }, (_, i) => ({ kind: BenchKinds.step, args: { i } })));
      const t0 = now();
      const enqueueMs = t0 - enqueuedAt;
      const n = jobs?.length ?? FAN + 1;
      const ms = await handledBy(ctx, hooks, n, t0);
      if (after) await after({ app, hooks });
      const options = effectiveOptions(app);
      await app.close();
      await db.drop();
      ctx.log(
        `  ${name}: ${ms === null ? 'timed out' : `${Math.round(n / (ms / 1000))} jobs/s (${r2(ms)} ms)`}, ` +
          `enqueued in ${r2(enqueueMs)} ms`,
      );
      return { ms, n, hooks, options, enqueueMs: r2(enqueueMs) };
    };
    const child = (i: number): GraphJob => ({ ref: `c${i}`, kind: BenchKinds.step, args: { i } });
    const children = Array.from({ length: FAN }, (_, i) => child(i));
    const refs = children.map((c) => c.ref);

    const plain = await run('plain drain', null);
    const fanIn = await run('fan-in', [...children, { ...child(FAN), ref: 'parent', dependsOn: refs }]);
    const fanOut = await run('fan-out', [
      { ...child(FAN), ref: 'root' },
      ...children.map((c) => ({ ...c, dependsOn: ['root'] })),
    ]);
    const rate = (r: { ms: number | null; n: number }) => (r.ms === null ? 0 : Math.round(r.n / (r.ms / 1000)));
    const base = { label: `one instance, defaults`, awa: fanIn.options };
    ctx.figure({
      metric: 'workflow_plain_jobs_per_s',
      value: rate(plain),
      n: plain.n,
      unit: 'jobs/s',
      config: { ...base, enqueue_ms: plain.enqueueMs },
    });
    ctx.figure({
      metric: 'workflow_fan_in_jobs_per_s',
      value: rate(fanIn),
      n: fanIn.n,
      unit: 'jobs/s',
      config: { ...base, enqueue_ms: fanIn.enqueueMs, vs_plain: rate(plain) ? r2(rate(fanIn) / rate(plain)) : null },
    });
    ctx.figure({
      metric: 'workflow_fan_out_jobs_per_s',
      value: rate(fanOut),
      n: fanOut.n,
      unit: 'jobs/s',
      config: { ...base, enqueue_ms: fanOut.enqueueMs },
    });

    // Right after the chain, on the same instance: plain enqueue -> handler start, serial (the latency
    // scenarios' method), so the two are compared on one machine load.
    const plainLatency: number[] = [];
    const chain = await run(
      'chain',
      Array.from({ length: CHAIN }, (_, i) => ({ ...child(i), ...(i > 0 ? { dependsOn: [`c${i - 1}`] } : {}) })),
      async ({ app, hooks }) => {
        const producer = app.get(QueueProducer);
        for (let i = 0; i < PAIRED_SAMPLES + PAIRED_WARMUP && !ctx.abandoned; i++) {
          await sleep(Math.random() * ctx.config.latencyJitterMs);
          const started = hooks.armLatency(i);
          const t0 = now();
          await producer.enqueue(BenchKinds.latency, { i });
          const t1 = await Promise.race([started, sleep(5_000).then(() => null)]);
          if (t1 !== null && i >= PAIRED_WARMUP) plainLatency.push(t1 - t0);
        }
        plainLatency.sort((a, b) => a - b);
      },
    );
    const starts = chain.hooks.stepStarts;
    const steps = Array.from({ length: CHAIN - 1 }, (_, i) => starts.get(i + 1)! - starts.get(i)!)
      .filter((x) => Number.isFinite(x))
      .sort((a, b) => a - b);
    for (const p of [50, 99]) {
      ctx.figure({
        metric: `workflow_chain_step_p${p}_ms`,
        value: r2(percentile(steps, p)),
        n: steps.length,
        unit: 'ms',
        config: { ...base, steps: CHAIN },
      });
    }
    const plainP50 = percentile(plainLatency, 50);
    ctx.figure({
      metric: 'workflow_chain_plain_latency_p50_ms',
      value: r2(plainP50),
      n: plainLatency.length,
      unit: 'ms',
      config: { ...base, chain_vs_plain: r2(percentile(steps, 50) / plainP50) },
    });
    ctx.log(
      `  chain step p50 ${r2(percentile(steps, 50))} ms, p99 ${r2(percentile(steps, 99))} ms; ` +
        `plain enqueue->start on the same instance right after: p50 ${r2(plainP50)} ms`,
    );
  },
};
