import { QueueProducer } from 'nestjs-awa';
import { createBenchApp } from '../support/bench.app.js';
import { BenchKinds } from '../support/bench.handlers.js';
import { DbObserver } from '../support/bench.observer.js';
import { now } from '../support/bench.progress.js';
import { percentile, r2 } from '../support/bench.report.js';
import type { Scenario } from './scenario.js';

const WARMUP = 50;

/**
 * Enqueue cost on a producer-only instance (no worker consumes the jobs, so only the insert is
 * measured, like the peers bench's addJobs): sequential enqueue() calls, the same calls as one raw
 * single-row INSERT through pg (the floor: one round trip), and enqueueMany() in chunks.
 */
export const enqueueScenario: Scenario = {
  id: 'enqueue',
  title: 'enqueue: single and batch',
  run: async (ctx) => {
    const { config } = ctx;
    const db = await ctx.database();
    const { app } = await createBenchApp(db.url, {}, false);
    ctx.defer(() => app.close());
    const producer = app.get(QueueProducer);
    const observer = new DbObserver(db.url);
    await observer.connect();
    ctx.defer(() => observer.end());

    // Single: one awaited enqueue() after the other.
    for (let i = 0; i < WARMUP; i++) await producer.enqueue(BenchKinds.noop, { i });
    const calls = config.singleCalls;
    const each: number[] = [];
    const t0 = now();
    for (let i = 0; i < calls; i++) {
      const t = now();
      await producer.enqueue(BenchKinds.noop, { i });
      each.push(now() - t);
    }
    const singleMs = now() - t0;
    each.sort((a, b) => a - b);
    const single = {
      label: 'enqueue() one at a time',
      calls,
      ms: r2(singleMs),
      p50_us: Math.round(percentile(each, 50) * 1000),
      p99_us: Math.round(percentile(each, 99) * 1000),
    };
    ctx.figure({
      metric: 'enqueue_single_jobs_per_s',
      value: Math.round(calls / (singleMs / 1000)),
      n: calls,
      unit: 'jobs/s',
      config: single,
    });
    ctx.figure({
      metric: 'enqueue_single_mean_us',
      value: Math.round((singleMs / calls) * 1000),
      n: calls,
      unit: 'µs/call',
      config: single,
    });
    ctx.log(`  enqueue(): ${Math.round((singleMs / calls) * 1000)} µs per call`);

    // Floor: the same row with a plain prepared INSERT ... VALUES on one pg connection (the
    // insert trigger fires too), so the figure above can be read as "N round trips".
    const raw = {
      name: 'bench_raw_insert',
      text: `INSERT INTO awa.jobs (kind, queue, args) VALUES ($1, 'default', $2::jsonb) RETURNING id::text`,
    };
    for (let i = 0; i < WARMUP; i++) await observer.query(raw.text, [BenchKinds.noop, JSON.stringify({ i })]);
    const r0 = now();
    for (let i = 0; i < calls; i++) await observer.query(raw.text, [BenchKinds.noop, JSON.stringify({ i })]);
    const rawMs = now() - r0;
    ctx.figure({
      metric: 'enqueue_single_raw_insert_mean_us',
      value: Math.round((rawMs / calls) * 1000),
      n: calls,
      unit: 'µs/call',
      config: { label: 'baseline: raw pg INSERT ... VALUES, 1 row', calls, ms: r2(rawMs), sql: raw.text },
    });
    ctx.log(`  raw INSERT: ${Math.round((rawMs / calls) * 1000)} µs per call`);

    // Batch: n jobs through enqueueMany(), in chunks, and in one call (like addJobs(all n)).
    for (const chunk of [...new Set([config.enqueueChunk, config.n])]) {
      const items = Array.from({ length: config.n }, (_, i) => ({ kind: BenchKinds.noop, args: { i } }));
      const b0 = now();
      for (let i = 0; i < items.length; i += chunk) await producer.enqueueMany(items.slice(i, i + chunk));
      const ms = now() - b0;
      const value = Math.round(config.n / (ms / 1000));
      ctx.figure({
        metric: 'enqueue_jobs_per_s',
        value,
        n: config.n,
        unit: 'jobs/s',
        config: { label: `enqueueMany(), chunk=${chunk}`, chunk, calls: Math.ceil(config.n / chunk), ms: r2(ms) },
      });
      ctx.log(`  enqueueMany chunk ${chunk}: ${value} jobs/s`);
    }
  },
};
