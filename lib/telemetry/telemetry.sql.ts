import { statement } from '../sql/sql-statement.js';

/** One (queue, state) count of the unfinished jobs, with the age of the oldest due available job. */
export interface QueueDepthRow {
  queue: string;
  state: 'scheduled' | 'available' | 'running' | 'retryable' | 'waiting';
  count: number;
  /** Seconds since run_at of the oldest available job; null for the other states. */
  oldest_available_s: number | null;
}

/**
 * The leader's gauges: unfinished jobs by queue and state, and how long the oldest available job of
 * each queue has been due. Each part reads one partial index (available; scheduled and retryable) or
 * the leases (running), so finished jobs are never read, however many there are.
 */
export const queueDepths = statement<[], QueueDepthRow>(
  'telemetry_queue_depths',
  `
  SELECT queue, 'available' AS state, count(*)::int AS count,
         greatest(extract(epoch FROM now() - min(run_at)), 0)::float8 AS oldest_available_s
    FROM awa.jobs WHERE state = 'available' GROUP BY queue
  UNION ALL
  SELECT queue, state, count(*)::int, NULL FROM awa.jobs
   WHERE state IN ('scheduled', 'retryable') GROUP BY queue, state
  UNION ALL
  SELECT queue, 'waiting', count(*)::int, NULL FROM awa.jobs WHERE state = 'waiting' GROUP BY queue
  UNION ALL
  SELECT j.queue, 'running', count(*)::int, NULL
    FROM awa.active_leases l JOIN awa.jobs j ON j.id = l.job_id AND j.run_lease = l.run_lease
   WHERE j.state = 'running' GROUP BY j.queue`,
);
