import type { INestApplicationContext } from '@nestjs/common';
import { QueueProducer, type EnqueueManyItem } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { DrainProfile } from './bench.drain-profile.js';
import { BenchKinds } from './bench.handlers.js';
import { MachineCpuMeter } from './bench.machine-cpu.js';
import type { DbObserver } from './bench.observer.js';
import { now, waitFor } from './bench.progress.js';

export interface GatedDrain {
  /** From the COMMIT that made the jobs visible until the last one was `completed` in the DB. */
  ms: number;
  /** The jobs handled when the DB showed all of them completed (a handler may run twice). */
  handled: number;
  completedInDb: number;
  ok: boolean;
  /** How long the gated insert took (not part of `ms`). */
  enqueueMs: number;
  /**
   * CPU time (user + system, µs) of this process over `ms`: the in-process instance's work, plus the
   * bench's own polling. Unlike `ms`, other work on a shared machine barely moves it.
   */
  cpuUs: number;
  /**
   * CPU time of the whole machine over `ms` (all cores, µs; undefined off Linux): this process's,
   * the database server's and the kernel's. On a machine the server shares, the drain is bound by
   * it when the cores are busy, and then `cpuUs` is the instance's share of every job's cost.
   */
  machineCpuUs: number | undefined;
  /**
   * WAL the server wrote over `ms` (bytes, from pg_current_wal_insert_lsn()): the drain's and the
   * instance's maintenance's. Unlike `ms`, it does not move with the machine's load.
   */
  walBytes: number;
}

/**
 * Pre-enqueues `n` no-op jobs inside one transaction of `producer`'s DataSource while the workers
 * are booted and idle, then commits: the jobs become visible (and the insert trigger's NOTIFY is
 * delivered) at that instant. The clock starts at COMMIT and stops once handlers have run `n` jobs
 * and the DB shows every one `completed`: the drain alone, with no boot time in it.
 */
export async function gatedDrain(options: {
  producer: INestApplicationContext;
  observer: DbObserver;
  n: number;
  chunk: number;
  handled: () => number;
  timeoutMs: number;
  log: (line: string) => void;
  /** Enqueue options of job `i` (e.g. its concurrencyKey). Default: none. */
  options?: (i: number) => Omit<EnqueueManyItem, 'kind' | 'args'>;
  /** The kind of the jobs. Default: bench.noop. */
  kind?: string;
}): Promise<GatedDrain> {
  const { producer, observer, n, chunk } = options;
  const queue = producer.get(QueueProducer);
  const items = Array.from({ length: n }, (_, i) => ({
    ...options.options?.(i),
    kind: options.kind ?? BenchKinds.noop,
    args: { i },
  }));
  const ids: string[] = [];
  let t0 = 0;
  let first = '';
  let last = '';
  let cpu0 = process.cpuUsage();
  let machine = new MachineCpuMeter();
  let wal0 = 0n;
  const profile = new DrainProfile();
  const enqueueStarted = now();
  await producer.get(DataSource).transaction(async (manager) => {
    for (let i = 0; i < n; i += chunk) {
      for (const job of await queue.enqueueMany(items.slice(i, i + chunk), { manager })) ids.push(job.id);
    }
    // Before the clock starts (the jobs are not visible yet): sorting 200,000 ids is CPU the drain must not count.
    const sorted = ids.map(BigInt).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    first = String(sorted[0]);
    last = String(sorted[sorted.length - 1]);
    wal0 = await observer.walInsertPosition();
    await profile.start();
    t0 = now(); // the callback returns, TypeORM sends COMMIT
    cpu0 = process.cpuUsage();
    machine = new MachineCpuMeter();
  });
  const enqueueMs = t0 - enqueueStarted;
  options.log(`  ${n} jobs committed (insert took ${Math.round(enqueueMs)} ms); draining`);

  let ok = true;
  try {
    // Like the peers bench: a cheap in-process count first, then the DB (every 10 ms).
    await waitFor(() => options.handled() >= n, options.timeoutMs, `${n} handled jobs`, 2);
    await waitFor(
      async () => (await observer.notCompleted(first, last)) === 0,
      30_000,
      'all jobs completed in the DB',
      10,
    );
  } catch (error) {
    ok = false;
    options.log(`  ${String(error)}`);
  }
  const ms = now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const machineCpu = machine.read();
  const profilePath = await profile.stop();
  if (profilePath) options.log(`  profile of the drain: ${profilePath}`);
  const walBytes = Number((await observer.walInsertPosition()) - wal0);
  const completedInDb = n - (await observer.notCompleted(first, last));
  return {
    ms,
    handled: options.handled(),
    completedInDb,
    ok: ok && completedInDb === n,
    enqueueMs,
    cpuUs: cpu.user + cpu.system,
    machineCpuUs: machineCpu?.busyUs,
    walBytes,
  };
}
