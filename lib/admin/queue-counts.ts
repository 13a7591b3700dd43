import type { AwaDatabase } from '../database/awa-database.js';
import { JOB_STATES, type JobState } from '../interfaces/job.interface.js';
import { queueCountsSql } from '../sql/index.js';
import type { FinishedSample } from '../sql/queue-counts.sql.js';

/**
 * The finished states are counted exactly while there are fewer than this many finished jobs
 * (queueCountsSql.finishedSample reads at most this many, in table order); beyond, `completed` is estimated.
 */
export const FINISHED_EXACT_CAP = 10_000;
/**
 * Past FINISHED_EXACT_CAP, `failed` and `cancelled` are still counted exactly while there are fewer
 * than this many of each (read through jobs_admin_state_idx, a heap page per job); beyond, estimated.
 */
export const RARE_EXACT_CAP = 1_000;

/** A queue's counts as the dashboard and QueueAdmin.queueStates read them. */
export interface QueueCounts {
  name: string;
  pausedAt: Date | null;
  /** Every state is present (0 when none). */
  counts: Record<JobState, number>;
  /** The states whose count is the planner's estimate, not a count: finished states past their cap. */
  estimated: JobState[];
  oldestAvailableAt: Date | null;
  oldestAvailableAgeMs: number | null;
}

const FINISHED: Array<FinishedSample & JobState> = ['failed', 'cancelled'];

/**
 * Counts the jobs of every queue at a cost that does not grow with the finished jobs kept: exact
 * counts of the unfinished states (bounded by the backlog, read through their indexes), exact
 * counts of the finished states while they are few, and planner estimates past that.
 */
export async function readQueueCounts(db: AwaDatabase, handlerQueues: string[]): Promise<QueueCounts[]> {
  const [waiting, samples] = await Promise.all([
    db.query(queueCountsSql.queueWaitingCounts, [handlerQueues]),
    db.query(queueCountsSql.finishedSample, [FINISHED_EXACT_CAP, RARE_EXACT_CAP]),
  ]);
  const byName = new Map<string, QueueCounts>();
  const queue = (name: string): QueueCounts => {
    let q = byName.get(name);
    if (!q) {
      const counts = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
      q = { name, pausedAt: null, counts, estimated: [], oldestAvailableAt: null, oldestAvailableAgeMs: null };
      byName.set(name, q);
    }
    return q;
  };
  for (const row of waiting) {
    const q = queue(row.name);
    q.pausedAt = row.paused_at;
    if (row.state) q.counts[row.state] = row.count;
    if (row.oldest_available_at) {
      q.oldestAvailableAt = row.oldest_available_at;
      q.oldestAvailableAgeMs = Math.max(0, row.oldest_available_ms ?? 0);
    }
  }
  const whole = (sample: FinishedSample) =>
    (samples.find((r) => r.sample === sample)?.total ?? 0) <
    (sample === 'finished' ? FINISHED_EXACT_CAP : RARE_EXACT_CAP);
  // Which finished states each sample counts exactly.
  const exact = whole('finished')
    ? { finished: ['completed', 'failed', 'cancelled'], failed: [], cancelled: [] }
    : { finished: [], failed: whole('failed') ? ['failed'] : [], cancelled: whole('cancelled') ? ['cancelled'] : [] };
  for (const row of samples)
    if ((exact[row.sample] as string[]).includes(row.state)) queue(row.queue).counts[row.state] = row.count;
  const guessed = (['completed', ...FINISHED] as JobState[]).filter((s) => !Object.values(exact).flat().includes(s));
  if (guessed.length > 0) {
    for (const row of samples) queue(row.queue); // a queue seen only among finished jobs
    const pairs = [...byName.keys()].flatMap((name) => guessed.map((state) => [name, state] as const));
    const estimates = await db.query(queueCountsSql.estimateJobs, [pairs.map((p) => p[0]), pairs.map((p) => p[1])]);
    for (const row of estimates) queue(row.queue).counts[row.state] = Math.round(row.estimate);
    for (const q of byName.values()) q.estimated = guessed;
  }
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}
