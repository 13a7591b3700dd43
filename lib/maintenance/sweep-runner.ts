import { performance } from 'node:perf_hooks';
import type { MaintenanceTask } from './tasks/maintenance-task.js';

/** The clock of sweep budgets (a test may replace `now`). */
export const sweepClock = { now: (): number => performance.now() };

/** Rows moved by each task of one maintenance sweep (`MaintenanceService.sweep()`), by task name. */
export interface SweepReport {
  /** Leases whose heartbeat was older than heartbeatStaleAfter, rescued. */
  'heartbeat rescue': number;
  /** Leases past their hard deadline, rescued. */
  'deadline rescue': number;
  /** Scheduled and retryable jobs whose time came, made available. */
  promotion: number;
  /** Finished unique jobs still holding their key in awa.jobs, past their retention, deleted. */
  cleanup: number;
  /** Rings of awa.job_history moved on to their next segment (emptied: jobs past their retention). */
  'history rotation': number;
  /** Rows of idle concurrency keys (awa.flow_keys), deleted. */
  'flow keys cleanup': number;
  /** Durable job events past their retention that every group has passed, deleted. */
  'job events cleanup': number;
}

/** The tasks of a sweep, by their report key. */
export type SweepTaskName = keyof SweepReport;

export interface SweepLimits {
  /** Time the tick may spend; past it, no further batch starts (every task still runs once). */
  budgetMs: number;
  /** Checked before every further batch: false (stopping, leadership lost) ends the tick. */
  keepGoing: () => boolean;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Runs one batch of each task, then again, round robin, for the tasks whose batch came back full,
 * until every task has come back short or the budget is spent. Round robin: a deep backlog of one
 * task (cleanup after an outage) does not starve the others of the tick. `runBatch` returns the
 * rows a batch moved (0 on error, which ends that task's tick). Between batches the event loop
 * gets a turn, so the instance's workers and heartbeats are not held up by a long sweep.
 */
export async function runSweep<Name extends string>(
  tasks: readonly MaintenanceTask<Name>[],
  runBatch: (task: MaintenanceTask<Name>) => Promise<number>,
  limits: SweepLimits,
): Promise<Record<Name, number>> {
  const deadline = sweepClock.now() + limits.budgetMs;
  const report = Object.fromEntries(tasks.map((t) => [t.name, 0])) as Record<Name, number>;
  let pending = [...tasks];
  for (let round = 0; pending.length > 0; round++) {
    const full: MaintenanceTask<Name>[] = [];
    for (const task of pending) {
      if (round > 0) {
        await yieldToEventLoop();
        if (!limits.keepGoing() || sweepClock.now() >= deadline) return report;
      }
      const moved = await runBatch(task);
      report[task.name] += moved;
      if (moved >= task.batchSize) full.push(task);
    }
    pending = full;
  }
  return report;
}
