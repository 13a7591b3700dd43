import { QueueProducer } from 'nestjs-awa';
import { createBenchApp, effectiveOptions } from '../support/bench.app.js';
import { BenchKinds } from '../support/bench.handlers.js';
import { now, sleep } from '../support/bench.progress.js';
import { percentile, r2 } from '../support/bench.report.js';
import { measurePickupFloor } from '../support/bench.pickup-floor.js';
import { measureHandoffFloor } from '../support/bench.handoff-floor.js';
import { PickupStageProbe } from '../support/bench.pickup-stages.js';
import type { Scenario } from './scenario.js';

const SAMPLE_TIMEOUT_MS = 5_000;

/** The stages of a pickup from another instance, each timed on its own (their p50s need not add up to the whole's). */
type PickupStage = 'inserting' | 'notified' | 'toClaim' | 'claim' | 'dispatch';
const STAGE_METRIC: Record<PickupStage, string> = {
  inserting: 'enqueue_path',
  notified: 'notified',
  toClaim: 'to_claim',
  claim: 'claim',
  dispatch: 'dispatch',
};
const STAGE_TEXT: Record<PickupStage, string> = {
  inserting: "from the enqueue() call to its insert's send (the producer's Node path)",
  notified: "from the enqueue() call to the notification's arrival at the worker's session",
  toClaim: "from the notification to the claim's send (the worker's synchronous wake-up path)",
  claim: 'the claim, from its send to its rows',
  dispatch: "to the handler's start, from the claim's rows (or, handed off, from the notification)",
};
/** The stages of each path that has them: a handed job has no claim. */
const PATH_STAGES: Partial<Record<keyof typeof LABELS, PickupStage[]>> = {
  notify: ['inserting', 'notified', 'toClaim', 'claim', 'dispatch'],
  handoff: ['inserting', 'notified', 'dispatch'],
  'handoff-eager': ['inserting', 'notified', 'dispatch'],
};

/**
 * Serial enqueue -> handler-start latency with an idle worker, the peers bench's method: a uniform
 * 0..jitter ms pause before each enqueue (so enqueues are not phase-locked to any timer), warm-ups
 * discarded, nearest-rank percentiles. `local`: the job is enqueued on the worker's own instance,
 * which wakes its worker at once. `notify`: enqueued by another instance (a producer-only app in
 * the same process, so one clock), so the worker learns of it only through LISTEN/NOTIFY.
 */
const LABELS = {
  local: 'enqueue on the worker instance (local wake, handoff off)',
  notify: 'enqueue from another instance (NOTIFY, then a claim: handoff off)',
  handoff: 'enqueue from another instance, handed to the idle worker (default options: handoff on)',
  'handoff-eager':
    "enqueue from another instance, handed to the idle worker when its insert commits, before the flush (handoff: 'eager')",
} as const;

export function latencyScenario(path: keyof typeof LABELS): Scenario {
  const label = LABELS[path];
  // The local and notify paths measure the claim after a wake-up: the queue option handoff (on by
  // default, docs/handoff.md) is turned off on both of their instances; the enqueue decides.
  // `handoff-eager` hands the job before its commit's flush (docs/handoff.md), on both instances too.
  const awa =
    path === 'handoff'
      ? {}
      : { queues: { default: { handoff: path === 'handoff-eager' ? ('eager' as const) : false } } };
  return {
    id: `latency-${path}`,
    title: `latency: ${label}`,
    run: async (ctx) => {
      const { config } = ctx;
      const db = await ctx.database();
      const worker = await createBenchApp(db.url, awa, true);
      ctx.defer(() => worker.app.close());
      const producerApp =
        path === 'local' ? worker.app : (await createBenchApp(db.url, awa, false, 'awa_bench_producer')).app;
      if (producerApp !== worker.app) ctx.defer(() => producerApp.close());
      const producer = producerApp.get(QueueProducer);

      const samples: number[] = [];
      // The producer's share of each sample: until enqueue() returned (its insert, committed).
      const enqueues: number[] = [];
      // From another instance: the stages of each sample (PickupStageProbe), in ms.
      const stageNames = PATH_STAGES[path] ?? [];
      const stages = Object.fromEntries(stageNames.map((stage) => [stage, [] as number[]])) as Partial<
        Record<PickupStage, number[]>
      >;
      const handed = path === 'handoff' || path === 'handoff-eager';
      const probe = stageNames.length ? new PickupStageProbe(handed).attach() : undefined;
      if (probe) ctx.defer(() => probe.detach());
      let timeouts = 0;
      const total = config.latencyWarmup + config.latencySamples;
      for (let i = 0; i < total && !ctx.abandoned; i++) {
        await sleep(Math.random() * config.latencyJitterMs);
        const started = worker.hooks.armLatency(i);
        probe?.arm();
        const t0 = now();
        await producer.enqueue(BenchKinds.latency, { i });
        const returned = now();
        const t1 = await Promise.race([started, sleep(SAMPLE_TIMEOUT_MS).then(() => null)]);
        if (t1 === null) {
          timeouts++;
          continue;
        }
        if (i >= config.latencyWarmup) {
          samples.push(t1 - t0);
          enqueues.push(returned - t0);
          const marks = probe?.read();
          if (marks) {
            const at: Record<PickupStage, number> = {
              inserting: marks.inserting - t0,
              notified: marks.notified - t0,
              toClaim: marks.claimSent - marks.notified,
              claim: marks.claimed - marks.claimSent,
              dispatch: t1 - (handed ? marks.notified : marks.claimed),
            };
            // A sample whose job another path brought (a poll, a claim) lacks a mark: no stages.
            if (stageNames.every((stage) => Number.isFinite(at[stage])))
              for (const stage of stageNames) stages[stage]!.push(at[stage]);
          }
        }
        if ((i + 1) % 100 === 0) ctx.log(`  ${i + 1}/${total} samples`);
      }
      samples.sort((a, b) => a - b);
      enqueues.sort((a, b) => a - b);
      const mean = samples.reduce((s, x) => s + x, 0) / (samples.length || 1);
      const base = {
        label,
        path,
        samples: samples.length,
        warmup: config.latencyWarmup,
        timeouts,
        jitter_ms: config.latencyJitterMs,
        mean_ms: r2(mean),
        ok: samples.length === config.latencySamples,
        awa: effectiveOptions(worker.app),
        enqueue: 'QueueProducer.enqueue()',
      };
      const stats = {
        p50: percentile(samples, 50),
        p95: percentile(samples, 95),
        p99: percentile(samples, 99),
        max: samples.at(-1) ?? NaN,
      };
      for (const [key, value] of Object.entries(stats)) {
        ctx.figure({ metric: `latency_${key}_ms`, value: r2(value), n: samples.length, unit: 'ms', config: base });
      }
      const enqueueP50 = percentile(enqueues, 50);
      ctx.figure({
        metric: 'latency_enqueue_p50_ms',
        value: r2(enqueueP50),
        n: enqueues.length,
        unit: 'ms',
        config: base,
      });
      if (probe) {
        const p50 = (stage: PickupStage) => r2(percentile(stages[stage] ?? [], 50));
        for (const [stage, xs] of Object.entries(stages) as Array<[PickupStage, number[]]>) {
          xs.sort((a, b) => a - b);
          ctx.figure({
            metric: `latency_stage_${STAGE_METRIC[stage]}_p50_ms`,
            value: r2(percentile(xs, 50)),
            n: xs.length,
            unit: 'ms',
            config: { ...base, stage: STAGE_TEXT[stage] },
          });
        }
        const claim = handed ? '' : `claim sent ${p50('toClaim')} ms later, answered in ${p50('claim')}; `;
        ctx.log(
          `  stages at p50: insert sent ${p50('inserting')} ms after enqueue() was called, ` +
            `notified ${p50('notified')} ms after the call; ${claim}handler started ${p50('dispatch')} ms after that`,
        );
      }
      ctx.log(
        `  p50 ${r2(stats.p50)} / p95 ${r2(stats.p95)} / p99 ${r2(stats.p99)} ` +
          `/ max ${r2(stats.max)} ms, ${timeouts} timeouts; enqueue() returned at p50 ${r2(enqueueP50)} ms`,
      );
      if (path === 'notify' && !ctx.abandoned) {
        // The same loop with nothing but SQL around it (bench.pickup-floor.ts), on the same server.
        const loop = { warmup: config.latencyWarmup, samples: config.latencySamples, jitterMs: config.latencyJitterMs };
        const floor = await measurePickupFloor(db.url, loop);
        const floorConfig = {
          label: 'SQL floor: INSERT + NOTIFY, then UPDATE by key on the listener (pg, no framework)',
          samples: floor.claimed.length,
          warmup: config.latencyWarmup,
          timeouts: floor.timeouts,
          jitter_ms: config.latencyJitterMs,
          ok: floor.claimed.length === config.latencySamples,
        };
        for (const xs of [floor.claimed, floor.inserted, floor.notified]) xs.sort((a, b) => a - b);
        const [claimed, inserted, notified] = [floor.claimed, floor.inserted, floor.notified].map((xs) =>
          percentile(xs, 50),
        ) as [number, number, number];
        for (const [metric, value] of [
          ['latency_floor_p50_ms', claimed],
          ['latency_floor_p99_ms', percentile(floor.claimed, 99)],
          ['latency_floor_insert_p50_ms', inserted],
          ['latency_floor_notified_p50_ms', notified],
        ] as const) {
          ctx.figure({ metric, value: r2(value), n: floor.claimed.length, unit: 'ms', config: floorConfig });
        }
        ctx.log(
          `  SQL floor: claimed at p50 ${r2(claimed)} ms (insert committed ${r2(inserted)}, notified ${r2(notified)})`,
        );
        // The floor of a design without the worker's claim (bench.handoff-floor.ts), on the same server.
        const handoff = await measureHandoffFloor(db.url, loop);
        handoff.started.sort((a, b) => a - b);
        const handoffConfig = {
          label:
            "SQL floor of a handoff: the enqueue takes an idle worker's offer and inserts the job running (pg, no framework)",
          samples: handoff.started.length,
          warmup: config.latencyWarmup,
          timeouts: handoff.timeouts,
          not_handed_off: handoff.notHandedOff,
          jitter_ms: config.latencyJitterMs,
          ok: handoff.started.length === config.latencySamples,
        };
        for (const [metric, p] of [
          ['latency_handoff_floor_p50_ms', 50],
          ['latency_handoff_floor_p99_ms', 99],
        ] as const) {
          const value = r2(percentile(handoff.started, p));
          ctx.figure({ metric, value, n: handoff.started.length, unit: 'ms', config: handoffConfig });
        }
        ctx.log(`  SQL floor of a handoff: started at p50 ${r2(percentile(handoff.started, 50))} ms`);
      }
    },
  };
}
