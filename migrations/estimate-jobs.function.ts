/**
 * awa.estimate_jobs(queue, state): the planner's estimate of the jobs of one queue in one state in
 * `relation`, planned (never run) with EXPLAIN; volatile, as PostgreSQL allows EXPLAIN in no other.
 * Over awa.jobs (AwaQueueCountEstimates), then over awa.all_jobs (AwaJobHistory).
 */
export const estimateJobsFunction = (relation: string) => `
  CREATE OR REPLACE FUNCTION awa.estimate_jobs(p_queue text, p_state text) RETURNS bigint
    LANGUAGE plpgsql AS $$
  DECLARE
    plan jsonb;
  BEGIN
    EXECUTE format('EXPLAIN (FORMAT JSON) SELECT FROM ${relation} WHERE (queue || '''') = %L AND state = %L', p_queue, p_state)
      INTO plan;
    RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
  END $$`;
