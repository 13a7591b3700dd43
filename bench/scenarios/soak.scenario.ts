import { QueueProducer, type EnqueueManyItem } from 'nestjs-awa';
import { createBenchApp, effectiveOptions } from '../support/bench.app.js';
import { BenchKinds } from '../support/bench.handlers.js';
import { MachineCpuMeter } from '../support/bench.machine-cpu.js';
import { DbObserver } from '../support/bench.observer.js';
import { now, sleep } from '../support/bench.progress.js';
import { r2 } from '../support/bench.report.js';
import type { SoakConfig } from '../support/bench.soak-config.js';
import { holdSnapshot } from '../support/bench.snapshot-hold.js';
import type { Scenario } from './scenario.js';

/** How often the producer tops the enqueued count up to rate × elapsed time. */
const PACE_MS = 100;
const MAX_CHUNK = 5_000;

interface TableSample {
  rows: number;
  waiting: number;
  running: number;
  live: number;
  dead: number;
  heap_bytes: number;
  total_bytes: number;
  autovacuums: number;
  /** awa.job_history, where finished jobs go: live rows (statistics, not a count) and size. */
  history_rows: number;
  history_bytes: number;
}

/**
 * Exact row counts of awa.jobs (one pass; cheap at these sizes), its statistics and sizes; and
 * awa.job_history's live rows (from its partitions' statistics: a count of millions of rows every
 * interval would load the server being measured) and size.
 */
async function sample(observer: DbObserver): Promise<TableSample> {
  const [row] = await observer.query<TableSample>(`
    SELECT c.rows, c.waiting, c.running,
           s.n_live_tup::int AS live, s.n_dead_tup::int AS dead, s.autovacuum_count::int AS autovacuums,
           pg_table_size('awa.jobs')::float8 AS heap_bytes, pg_total_relation_size('awa.jobs')::float8 AS total_bytes,
           h.rows AS history_rows, h.bytes AS history_bytes
      FROM pg_stat_user_tables s,
           LATERAL (SELECT coalesce(sum(p.n_live_tup), 0)::float8 AS rows,
                           coalesce(sum(pg_total_relation_size(t.relid)), 0)::float8 AS bytes
                      FROM pg_partition_tree('awa.job_history') t
                      LEFT JOIN pg_stat_user_tables p ON p.relid = t.relid
                     WHERE t.isleaf) h,
           -- One pass over the table: three counts each read it whole, up to a second at a backlog.
           (SELECT count(*)::int AS rows,
                   (count(*) FILTER (WHERE state IN ('available', 'scheduled', 'retryable')))::int AS waiting,
                   (count(*) FILTER (WHERE state = 'running'))::int AS running
              FROM awa.jobs) c
     WHERE s.relid = 'awa.jobs'::regclass`);
  return row!;
}

const mb = (bytes: number) => r2(bytes / 2 ** 20);

/** The machine's idle and steal % over the last report's interval (none where /proc/stat is missing). */
function machineColumns(meter: MachineCpuMeter): { idle_pct?: number; steal_pct?: number } {
  const cpu = meter.read();
  return cpu ? { idle_pct: cpu.idle, steal_pct: cpu.steal } : {};
}

/**
 * Sustained load: one instance (the headline profile, and the maintenance leader) runs no-op jobs
 * that a producer in the same process enqueues at a steady `rate`, for `seconds`, with a short
 * retention. Every `reportMs` it reports the jobs/s handled and enqueued, awa.jobs' rows, dead
 * tuples and size (unfinished jobs only: it settles at the backlog), and awa.job_history's rows and
 * size (once retention applies, the rotation truncates a segment as a new one fills), and the
 * machine's idle and steal CPU % (Linux: a stall with the machine idle is the database's or ours). With
 * `--hold-seconds N`, a snapshot is held open on the database from `--hold-at` (s) for N seconds; with
 * `--output-bytes N`, every handler returns an output (N bytes of text), so the completions store it.
 */
export function soakScenario(soak: SoakConfig): Scenario {
  return {
    id: 'soak',
    title:
      `soak: ${soak.rate} jobs/s for ${soak.seconds} s, retention ` +
      `${soak.retentionMs} ms, maintenance every ${soak.maintenanceMs} ms` +
      (soak.holdSeconds > 0 ? `, a snapshot held from ${soak.holdAt} s for ${soak.holdSeconds} s` : '') +
      (soak.outputBytes > 0 ? `, each handler returning an output of ${soak.outputBytes} bytes of text` : ''),
    timeoutMs: soak.seconds * 1_000 + 120_000,
    run: async (ctx) => {
      const [profile] = ctx.config.profiles;
      const db = await ctx.database();
      const { app, hooks } = await createBenchApp(
        db.url,
        {
          maintenanceInterval: soak.maintenanceMs,
          retention: { completed: soak.retentionMs, failed: soak.retentionMs },
          queues: { default: { concurrency: profile!.concurrency, prefetch: profile!.prefetch } },
        },
        true,
      );
      ctx.defer(() => app.close());
      const observer = new DbObserver(db.url);
      await observer.connect();
      ctx.defer(() => observer.end());
      const producer = app.get(QueueProducer);
      // Only autovacuum makes the space of deleted rows reusable: without it the table grows whatever cleanup does.
      const [{ autovacuum }] = (await observer.query<{ autovacuum: string }>(
        `SELECT current_setting('autovacuum') AS autovacuum`,
      )) as [{ autovacuum: string }];
      if (autovacuum !== 'on')
        ctx.log(
          `  WARNING: autovacuum is ${autovacuum} on this server: dead tuples ` +
            `are never reclaimed, so the table keeps growing`,
        );

      let enqueued = 0;
      let running = true;
      const started = now();
      if (soak.holdSeconds > 0) {
        const hold = holdSnapshot(db.url, soak.holdAt * 1_000, soak.holdSeconds * 1_000, ctx.log);
        ctx.defer(() => hold.end());
      }
      const produce = (async () => {
        while (running && !ctx.abandoned) {
          const due = Math.floor((soak.rate * (now() - started)) / 1_000);
          while (enqueued < due && running) {
            const n = Math.min(due - enqueued, MAX_CHUNK);
            await producer.enqueueMany(
              Array.from({ length: n }, (_, i): EnqueueManyItem<{ i: number; bytes?: number }> =>
                soak.outputBytes > 0
                  ? { kind: BenchKinds.output, args: { i: enqueued + i, bytes: soak.outputBytes } }
                  : { kind: BenchKinds.noop, args: { i: enqueued + i } },
              ),
            );
            enqueued += n;
          }
          await sleep(PACE_MS);
        }
      })();

      const first = await sample(observer);
      const rows: Array<Record<string, number>> = [];
      let last = { t: started, handled: 0, enqueued: 0, autovacuums: first.autovacuums };
      ctx.log(
        `  ${'t (s)'.padStart(6)} ${'handled/s'.padStart(10)} ${'enqueued/s'.padStart(10)} ` +
          `${'rows'.padStart(9)} ${'waiting'.padStart(9)} ${'running'.padStart(8)} ` +
          `${'dead'.padStart(9)} ${'heap MB'.padStart(8)} ${'total MB'.padStart(8)} autovacuums ` +
          `${'history rows'.padStart(12)} ${'history MB'.padStart(10)} ${'idle %'.padStart(6)} ${'steal %'.padStart(7)}`,
      );
      const machine = new MachineCpuMeter();
      try {
        for (let i = 1; (i - 1) * soak.reportMs < soak.seconds * 1_000 && !ctx.abandoned; i++) {
          await sleep(Math.max(0, started + i * soak.reportMs - now()));
          const t = now();
          const s = await sample(observer);
          const secs = (t - last.t) / 1_000;
          const row = {
            at_s: Math.round((t - started) / 1_000),
            handled_per_s: Math.round((hooks.handled - last.handled) / secs),
            enqueued_per_s: Math.round((enqueued - last.enqueued) / secs),
            rows: s.rows,
            waiting: s.waiting,
            running: s.running,
            dead_tuples: s.dead,
            heap_mb: mb(s.heap_bytes),
            total_mb: mb(s.total_bytes),
            autovacuums: s.autovacuums - last.autovacuums,
            history_rows: s.history_rows,
            history_mb: mb(s.history_bytes),
            ...machineColumns(machine),
          };
          rows.push(row);
          last = { t, handled: hooks.handled, enqueued, autovacuums: s.autovacuums };
          ctx.log(
            `  ${String(row.at_s).padStart(6)} ${String(row.handled_per_s).padStart(10)} ` +
              `${String(row.enqueued_per_s).padStart(10)} ${String(row.rows).padStart(9)} ` +
              `${String(row.waiting).padStart(9)} ${String(row.running).padStart(8)} ` +
              `${String(row.dead_tuples).padStart(9)} ${String(row.heap_mb).padStart(8)} ` +
              `${String(row.total_mb).padStart(8)} ${String(row.autovacuums).padStart(11)} ` +
              `${String(row.history_rows).padStart(12)} ${String(row.history_mb).padStart(10)} ` +
              `${String(row.idle_pct ?? '-').padStart(6)} ${String(row.steal_pct ?? '-').padStart(7)}`,
          );
          const config = { label: `t=${row.at_s}s`, ...row, soak, autovacuum, awa: effectiveOptions(app) };
          ctx.figure({ metric: 'soak_jobs_per_s', value: row.handled_per_s, n: enqueued, unit: 'jobs/s', config });
          ctx.figure({
            metric: 'soak_table_rows',
            value: row.rows,
            n: enqueued,
            unit: 'rows',
            config: { label: config.label },
          });
          ctx.figure({
            metric: 'soak_dead_tuples',
            value: row.dead_tuples,
            n: enqueued,
            unit: 'tuples',
            config: { label: config.label },
          });
          ctx.figure({
            metric: 'soak_table_mb',
            value: row.total_mb,
            n: enqueued,
            unit: 'MB',
            config: { label: config.label, heap_mb: row.heap_mb },
          });
          ctx.figure({
            metric: 'soak_history_mb',
            value: row.history_mb,
            n: enqueued,
            unit: 'MB',
            config: { label: config.label, history_rows: row.history_rows },
          });
        }
      } finally {
        running = false;
        await produce;
      }
    },
  };
}
