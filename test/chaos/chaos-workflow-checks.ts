// The workflow load's invariants (docs/workflows.md): nothing left waiting, no step before its
// dependencies, and every step ended as its edges' policies say. Read after the run, like the others.
import { CHAOS_STEP_KINDS, DEPENDENCY_ENDED_ERROR } from './chaos-config.js';
import type { Check } from './chaos-invariants.js';

const sample = (rows: unknown[]) => rows.slice(0, 5).map((r) => JSON.stringify(r));

function rows(name: string, sql: string, values: unknown[] = []): Check {
  return {
    name,
    async run(query) {
      const found = await query(sql, values);
      return found.length === 0 ? [] : [`${found.length} row(s), e.g. ${sample(found).join('; ')}`];
    },
  };
}

export const WORKFLOW_CHECKS: Check[] = [
  // Every dependency ends in this run, so a step still waiting waits for nothing that can finish.
  rows(
    'no workflow step is left waiting (its dependencies have all ended)',
    `SELECT j.id::text, j.waiting_on,
            array_agg(e.dependency_id::text || ':' || coalesce(e.state, 'open') || '@' || coalesce(e.resolved_at::text, '-')
                      || ' ' || coalesce((SELECT string_agg(t.old_state || '>' || t.new_state || '@' || t.at::time::text, ',' ORDER BY t.at)
                                            FROM chaos.transitions t WHERE t.job_id = e.dependency_id), '')) AS edges,
            (SELECT string_agg(w.old_n || '>' || w.new_n || ' tx' || w.txid || '@' || w.at::time::text || ' ' || w.query, '; ' ORDER BY w.at)
               FROM chaos.waits w WHERE w.job_id = j.id) AS waits
       FROM awa.jobs j LEFT JOIN awa.job_dependencies e ON e.dependent_id = j.id
      WHERE j.state = 'waiting' GROUP BY j.id, j.waiting_on`,
  ),
  // A claim (a lease row, chaos.claims) of a step comes after the completion of each of its
  // dependencies; with 'ignore', after their ending of any kind.
  rows(
    'no step was claimed before its dependencies completed (ended, with ignore)',
    `SELECT e.dependent_id::text AS step, e.dependency_id::text AS dependency, e.policy, c.run_lease::text,
            c.at AS claimed_at, t.at AS ended_at
       FROM awa.job_dependencies e
       JOIN chaos.claims c ON c.job_id = e.dependent_id
       LEFT JOIN LATERAL (
         SELECT min(t.at) AS at FROM chaos.transitions t
          WHERE t.job_id = e.dependency_id
            AND (t.new_state = 'completed' OR (e.policy = 'ignore' AND t.new_state IN ('failed', 'cancelled')))
       ) t ON true
      WHERE t.at IS NULL OR t.at >= c.at`,
  ),
  // The ending each step's edges call for: a dependency that did not complete fails the step
  // (any 'fail' edge) or cancels it ('cancel'); otherwise it ran (only a failing step may then fail).
  rows(
    'every step ended as the policies of its edges say',
    `WITH expected AS (
       SELECT e.dependent_id AS id, bool_or(e.state IS NULL) AS open_edge,
              CASE WHEN bool_or(e.state <> 'completed' AND e.policy = 'fail') THEN 'failed'
                   WHEN bool_or(e.state <> 'completed' AND e.policy = 'cancel') THEN 'cancelled'
                   ELSE 'ran' END AS ending
         FROM awa.job_dependencies e GROUP BY e.dependent_id
     )
     SELECT j.id::text, j.kind, j.state, x.ending, x.open_edge, j.errors
       FROM awa.all_jobs j JOIN expected x ON x.id = j.id
      WHERE x.open_edge
         OR (x.ending = 'ran' AND NOT (j.state = 'completed' OR (j.state = 'failed' AND j.kind = $1)))
         OR (x.ending = 'failed' AND NOT (j.state = 'failed' AND j.errors @> jsonb_build_array(jsonb_build_object('error', $2::text))))
         OR (x.ending = 'cancelled' AND j.state <> 'cancelled')`,
    [CHAOS_STEP_KINDS.failing.kind, DEPENDENCY_ENDED_ERROR],
  ),
  // Not a check that can pass by doing nothing: each policy met a failed dependency at least once.
  {
    name: 'each policy met a dependency that failed',
    async run(query) {
      const [r] = await query(`SELECT count(DISTINCT workflow_id)::int AS graphs,
                                      array_agg(DISTINCT policy) FILTER (WHERE state = 'failed') AS policies
                                 FROM awa.job_dependencies`);
      if (r.graphs < 9) return [];
      const met: string[] = r.policies ?? [];
      const missing = ['cancel', 'fail', 'ignore'].filter((p) => !met.includes(p));
      return missing.length === 0 ? [] : [`${r.graphs} graphs, but no failed dependency under ${missing.join(', ')}`];
    },
  },
];
