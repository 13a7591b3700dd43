import { statement } from '../sql/sql-statement.js';

/** One (queue, state) count of the unfinished jobs, with the age of the oldest due available job. */
export interface QueueDepthRow {
  queue: string;
  state: 'scheduled' | 'available' | 'running' | 'retryable';
  count: number;
  /** Seconds since run_at of the oldest available job; null for the other states. */
  oldest_available_s: number | null;
}

/**
 * The leader's gauges: unfinished jobs by queue and state, and how long the oldest available job of
 * each queue has been due. Finished jobs are not read: the state is the leading filter.
 */
export const queueDepths = statement<[], QueueDepthRow>(
  'telemetry_queue_depths',
  `
  SELECT queue, state, count(*)::int AS count,
         CASE WHEN state = 'available' THEN greatest(extract(epoch FROM now() - min(run_at)), 0)::float8 END
           AS oldest_available_s
    FROM awa.jobs
   WHERE state IN ('scheduled', 'available', 'running', 'retryable')
   GROUP BY queue, state`,
);
