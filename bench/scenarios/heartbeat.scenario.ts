import { HeartbeatService, QueueProducer } from 'nestjs-awa';
import { createBenchApp, effectiveOptions } from '../support/bench.app.js';
import { BenchKinds } from '../support/bench.handlers.js';
import { DbObserver } from '../support/bench.observer.js';
import { now, sleep, waitFor } from '../support/bench.progress.js';
import { r2 } from '../support/bench.report.js';
import type { Scenario } from './scenario.js';

const TICKS = 10;
/**
 * Real ticks are heartbeatInterval (30 s) apart; back to back, each would find the last one's dead row versions still
 * unpruned.
 */
const PAUSE_MS = 200;

/**
 * Cost of one heartbeat tick with `leases` attempts in flight on one instance: the instance claims
 * that many jobs of a handler that waits until the end, then HeartbeatService.tick() is timed
 * TICKS times, PAUSE_MS apart. The automatic heartbeat is pushed far out so that only the timed ticks run.
 */
export const heartbeatScenario: Scenario = {
  id: 'heartbeat',
  title: 'heartbeat: one tick at many in-flight leases',
  run: async (ctx) => {
    const { config } = ctx;
    const leases = config.heartbeatLeases;
    const batch = config.heartbeatBatchSize;
    const db = await ctx.database();
    const { app, hooks } = await createBenchApp(
      db.url,
      {
        heartbeatInterval: 600_000,
        heartbeatStaleAfter: 1_200_000,
        heartbeatBatchSize: batch,
        queues: { default: { concurrency: leases } },
      },
      true,
    );
    ctx.defer(() => app.close());
    ctx.defer(() => hooks.release()); // runs before close: held handlers return
    const observer = new DbObserver(db.url);
    await observer.connect();
    ctx.defer(() => observer.end());

    const producer = app.get(QueueProducer);
    const items = Array.from({ length: leases }, (_, i) => ({ kind: BenchKinds.hold, args: { i } }));
    for (let i = 0; i < leases; i += config.enqueueChunk)
      await producer.enqueueMany(items.slice(i, i + config.enqueueChunk));
    await waitFor(() => hooks.started >= leases, 120_000, `${leases} running handlers`, 10);
    const [row] = await observer.query<{ n: number }>(`SELECT count(*)::int AS n FROM awa.active_leases`);
    ctx.log(`  ${hooks.started} handlers running, ${row!.n} lease rows`);

    const heartbeat = app.get(HeartbeatService);
    // Untimed: the first tick of a process opens the pool connections it shares its chunks over
    // and prepares the statements on them, once in the life of the process.
    await heartbeat.tick();
    await sleep(PAUSE_MS);
    const ticks: number[] = [];
    let statements = 0;
    let refreshed = 0;
    for (let i = 0; i < TICKS; i++) {
      if (i > 0) await sleep(PAUSE_MS);
      const t0 = now();
      const report = await heartbeat.tick();
      ticks.push(now() - t0);
      if (!report) throw new Error('heartbeat tick failed or overlapped another tick');
      statements = report.statements;
      refreshed = report.refreshed;
    }
    const expected = Math.ceil(leases / batch);
    const base = {
      label: `${leases} in-flight leases`,
      leases,
      heartbeatBatchSize: batch,
      lease_rows: row!.n,
      ticks: TICKS,
      ticks_ms: ticks.map(r2),
      median_ms: r2([...ticks].sort((a, b) => a - b)[Math.floor(TICKS / 2)]!),
      max_ms: r2(Math.max(...ticks)),
      refreshed,
      expected_statements: expected,
      ok: statements === expected && refreshed === leases,
      awa: effectiveOptions(app),
    };
    ctx.figure({
      metric: 'heartbeat_tick_ms',
      value: r2(ticks.reduce((s, x) => s + x, 0) / ticks.length),
      n: leases,
      unit: 'ms/tick',
      config: base,
    });
    ctx.figure({
      metric: 'heartbeat_statements_per_tick',
      value: statements,
      n: leases,
      unit: 'statements',
      config: base,
    });
    ctx.log(
      `  ${ticks.map((t) => Math.round(t)).join(' / ')} ms per tick, ${statements} statements (expected ${expected})`,
    );

    hooks.release();
    await waitFor(
      async () =>
        (await observer.query<{ n: number }>(`SELECT count(*)::int AS n FROM awa.jobs WHERE state <> 'completed'`))[0]!
          .n === 0,
      60_000,
      'held jobs to complete',
      50,
    );
  },
};
