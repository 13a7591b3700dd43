import { RescueErrors } from 'nestjs-awa';
import {
  CHAOS_KINDS,
  CHAOS_STEP_KINDS,
  COUNTED_ERROR,
  DEPENDENCY_ENDED_ERROR,
  FLAKY_ERROR,
  STEP_FAIL_ERROR,
} from './chaos-config.js';

export type Query = (text: string, values?: unknown[]) => Promise<any[]>;

/**
 * Every error text a job may carry in this run: the rescues, the shutdown release, the give-back of a
 * prefetched rated job that could not start in time or of a job handed to a full worker, the flaky handler.
 */
export const DOCUMENTED_ERRORS = [
  RescueErrors.heartbeatStale,
  RescueErrors.deadlineExceeded,
  RescueErrors.releasedOnShutdown,
  RescueErrors.releasedUnstarted,
  RescueErrors.releasedHandoffBusy,
  FLAKY_ERROR,
  COUNTED_ERROR,
  STEP_FAIL_ERROR,
  DEPENDENCY_ENDED_ERROR,
];

/** A job ended by its workflow policy (it never ran its last claim to an end of its own). */
const ENDED_BY_DEPENDENCY = `errors @> jsonb_build_array(jsonb_build_object('error', '${DEPENDENCY_ENDED_ERROR}'))`;
/** 'worker instance died: ' — followed by the id of an instance that really existed. */
export const INSTANCE_DIED_PREFIX = RescueErrors.instanceDiedPrefix;

export interface Check {
  name: string;
  /** Returns a description of each violation (at most a few are shown). */
  run(query: Query): Promise<string[]>;
}

const sample = (rows: unknown[]) => rows.slice(0, 5).map((r) => JSON.stringify(r));

/** When the server crashed, so that an asynchronous claim may have been lost (epoch ms), or null. */
export type ClaimsLost = { from: number; to: number } | null;

/** A check, made for the run's number of plain jobs, the kind of its counted jobs and its crash. */
type MakeCheck = (jobs: number, counted: string, claimsLost?: ClaimsLost) => Check;

/** A check whose SQL returns one row per violating job. */
function rowsCheck(
  name: string,
  sql: string,
  values: (jobs: number, counted: string, claimsLost: ClaimsLost) => unknown[] = () => [],
): MakeCheck {
  return (jobs, counted, claimsLost = null) => ({
    name,
    async run(query) {
      const rows = await query(sql, values(jobs, counted, claimsLost));
      return rows.length === 0 ? [] : [`${rows.length} job(s), e.g. ${sample(rows).join('; ')}`];
    },
  });
}

/** Each check, made for the run's number of plain jobs and the kind of its counted jobs. */
const CHECKS: MakeCheck[] = [
  // None lost (and none duplicated by the producer): exactly one plain job per seq 0..N-1 (workflow
  // steps are checked in chaos-workflow-checks.ts).
  (jobs) => ({
    name: 'every produced job exists, once',
    async run(query) {
      const [r] = await query(`SELECT count(*)::int AS jobs, count(DISTINCT (args->>'seq')::int)::int AS seqs,
        min((args->>'seq')::int) AS lo, max((args->>'seq')::int) AS hi FROM awa.all_jobs WHERE workflow_id IS NULL`);
      return r.jobs === jobs && r.seqs === jobs && r.lo === 0 && r.hi === jobs - 1
        ? []
        : [`expected ${jobs} jobs with seq 0..${jobs - 1}, found ${JSON.stringify(r)}`];
    },
  }),
  rowsCheck(
    'every job is completed or failed (none left running or waiting; a workflow step may be cancelled)',
    // Each group with what a post-mortem needs: the queue's flow state and the rows of its keys.
    `SELECT j.state, j.queue, j.kind, count(*)::int AS n, min(j.run_at) AS first_run_at,
            (SELECT row_to_json(q) FROM awa.queues q WHERE q.name = j.queue) AS queue_row,
            (SELECT json_agg(f) FROM awa.flow_keys f
              WHERE f.queue = j.queue AND f.key = ANY (array_agg(j.concurrency_key))) AS key_rows
       FROM awa.all_jobs j
      WHERE j.state NOT IN ('completed', 'failed') AND NOT (j.workflow_id IS NOT NULL AND j.state = 'cancelled')
      GROUP BY j.state, j.queue, j.kind`,
  ),
  () => ({
    name: 'no lease is left',
    async run(query) {
      const [{ n }] = await query('SELECT count(*)::int AS n FROM awa.active_leases');
      return n === 0 ? [] : [`${n} lease row(s) left`];
    },
  }),
  rowsCheck(
    'every error entry is a documented one (the three rescues, the two releases, the flaky, counted and failing-step handlers, a dependency ending)',
    `SELECT j.id::text, e->>'error' AS error FROM awa.all_jobs j, jsonb_array_elements(j.errors) e
      WHERE NOT (e->>'error' = ANY($1::text[])
             OR EXISTS (SELECT 1 FROM chaos.instance_pids p WHERE e->>'error' = $2 || p.instance_id))`,
    () => [DOCUMENTED_ERRORS, INSTANCE_DIED_PREFIX],
  ),
  rowsCheck(
    'a failed job spent all its attempts',
    `SELECT id::text, kind, attempt, max_attempts FROM awa.all_jobs
      WHERE state = 'failed' AND attempt < max_attempts AND NOT ${ENDED_BY_DEPENDENCY}`,
  ),
  // Only hanging jobs and failing steps may fail (and steps whose policy says so): every other handler
  // succeeds by its second attempt at the latest.
  rowsCheck(
    'only hanging jobs and failing steps fail, and every one of them fails',
    `SELECT id::text, kind, state, errors FROM awa.all_jobs
      WHERE (state = 'failed' AND kind <> ALL ($1::text[]) AND NOT ${ENDED_BY_DEPENDENCY})
         OR (state = 'completed' AND kind = ANY ($1::text[]))`,
    () => [[CHAOS_KINDS.hang.kind, CHAOS_STEP_KINDS.failing.kind]],
  ),
  // Each claim ends exactly once: completed by its holder, or with one error entry (fail, rescue,
  // release). So a finished job has one entry per claim (chaos.claims) but the completed one; a step
  // ended by its policy has one more.
  rowsCheck(
    'one error entry per claim that did not complete',
    `SELECT id::text, state, claims, jsonb_array_length(errors) AS entries
       FROM (SELECT j.*, (SELECT count(*)::int FROM chaos.claims c WHERE c.job_id = j.id) AS claims FROM awa.all_jobs j) j
      WHERE state IN ('completed', 'failed')
        AND jsonb_array_length(errors) <> claims - CASE WHEN state = 'completed' THEN 1 ELSE 0 END
                                          + CASE WHEN ${ENDED_BY_DEPENDENCY} THEN 1 ELSE 0 END`,
  ),
  // A lease number is never handed out twice for a job, even across a server crash that lost an
  // asynchronous claim (see NEXT_RUN_LEASE): each claim's lease is above the one before, and the job
  // keeps the last one. A job never claimed keeps 0.
  rowsCheck(
    'claims of a job carry increasing run leases, each once, the job the last one',
    `SELECT j.id::text, j.run_lease::text, c.n, c.distinct_n, c.hi::text, c.not_increasing FROM awa.all_jobs j
       LEFT JOIN (SELECT job_id, count(*)::int AS n, count(DISTINCT run_lease)::int AS distinct_n, max(run_lease) AS hi,
                         count(*) FILTER (WHERE run_lease <= prev)::int AS not_increasing
                    FROM (SELECT job_id, run_lease, lag(run_lease) OVER (PARTITION BY job_id ORDER BY at) AS prev
                            FROM chaos.claims) x
                   GROUP BY job_id) c ON c.job_id = j.id
      WHERE (c.n IS NULL) <> (j.run_lease = 0) OR c.distinct_n <> c.n OR c.hi <> j.run_lease OR c.not_increasing > 0`,
  ),
  // No job was marked completed twice, and nothing moved a finished job again.
  rowsCheck(
    'a completed job was completed exactly once, and no finished job changed state again',
    `WITH t AS (SELECT job_id, count(*) FILTER (WHERE new_state = 'completed')::int AS completions,
                       count(*) FILTER (WHERE old_state IN ('completed', 'failed', 'cancelled'))::int AS after_final
                  FROM chaos.transitions GROUP BY job_id)
     SELECT j.id::text, j.state, coalesce(t.completions, 0) AS completions, coalesce(t.after_final, 0) AS after_final
       FROM awa.all_jobs j LEFT JOIN t ON t.job_id = j.id
      WHERE coalesce(t.completions, 0) <> CASE WHEN j.state = 'completed' THEN 1 ELSE 0 END
         OR coalesce(t.after_final, 0) > 0`,
  ),
  // No completion from a stale lease: the completion landed under the job's last claim, and that
  // claim's own process (its instance's pid) recorded a finished run of it before the completion.
  rowsCheck(
    'every completion landed from the last claim, after a recorded run of that very claim',
    `SELECT j.id::text, j.run_lease::text AS final_lease, t.run_lease::text AS completed_lease,
            c.instance_id, p.pid AS claimer_pid, r.pids AS recorded_by
       FROM awa.all_jobs j
       JOIN chaos.transitions t ON t.job_id = j.id AND t.new_state = 'completed'
       LEFT JOIN chaos.claims c ON c.job_id = j.id AND c.run_lease = t.run_lease
       LEFT JOIN chaos.instance_pids p ON p.instance_id = c.instance_id
       LEFT JOIN LATERAL (SELECT array_agg(pid) AS pids, bool_or(pid = p.pid AND at <= t.at) AS ok
                            FROM chaos.runs WHERE job_id = j.id AND run_lease = t.run_lease) r ON true
      WHERE t.run_lease <> j.run_lease OR NOT coalesce(r.ok, false)`,
  ),
  // job.transaction (docs/exactly-once.md): the handler's writes committed exactly once per job.
  (jobs, counted) => ({
    name: 'the job.transaction counter equals the completed counted jobs, exactly',
    async run(query) {
      const [r] = await query(
        `SELECT (SELECT n FROM chaos.counter WHERE id = 1)::int AS counter,
                (SELECT count(*) FROM awa.all_jobs WHERE kind = $1 AND state = 'completed')::int AS completed,
                (SELECT count(*) FROM awa.all_jobs WHERE kind = $1)::int AS counted_jobs`,
        [counted],
      );
      if (jobs >= 100 && r.counted_jobs === 0) return ['no chaos.counted job was produced'];
      return r.counter === r.completed ? [] : [`counter ${r.counter}, completed counted jobs ${r.completed}`];
    },
  }),
  rowsCheck(
    "each counted job's writes landed once, from the attempt that completed it, and none from another",
    `SELECT j.id::text, j.state, j.run_lease::text, c.leases FROM awa.all_jobs j
       LEFT JOIN (SELECT job_id, array_agg(run_lease::text) AS leases FROM chaos.counted GROUP BY job_id) c
              ON c.job_id = j.id
      WHERE j.kind = $1
        AND coalesce(c.leases, '{}') <> CASE WHEN j.state = 'completed' THEN ARRAY[j.run_lease::text] ELSE '{}' END`,
    (_jobs, counted) => [counted],
  ),
  // Finished jobs leave awa.jobs in the statement that finishes them (docs/storage.md).
  rowsCheck(
    'no job is in both awa.jobs and awa.job_history',
    `SELECT j.id::text, j.state, h.state AS archived_state FROM awa.jobs j JOIN awa.job_history h ON h.id = j.id`,
  ),
  rowsCheck(
    'every finished job that does not hold a unique key left awa.jobs',
    `SELECT id::text, state FROM awa.jobs
      WHERE state IN ('completed', 'failed', 'cancelled')
        AND NOT (unique_key IS NOT NULL AND coalesce(state = ANY (unique_states), false))`,
  ),
  // At-least-once allows earlier, rescued attempts to have run too, but one lease runs at most once,
  // and only in the process that claimed it. A claim is committed asynchronously (ClaimConnection):
  // one a server crash lost took its record with it, though its attempt may have started; that is
  // allowed for a lease taken (run leases are the database clock in µs) just before a crash
  // (`claimsLost`, ms). That its writes failed the fence, the completion and counted-writes checks
  // above verify.
  rowsCheck(
    'at most one finished run per (job, run_lease), in the process that claimed it',
    `SELECT r.job_id::text, r.run_lease::text, count(*)::int AS runs, array_agg(r.pid) AS pids,
            min(p.pid) AS claimer_pid
       FROM chaos.runs r
       LEFT JOIN chaos.claims c ON c.job_id = r.job_id AND c.run_lease = r.run_lease
       LEFT JOIN chaos.instance_pids p ON p.instance_id = c.instance_id
      GROUP BY r.job_id, r.run_lease
     HAVING count(*) > 1
         OR (bool_or(p.pid IS DISTINCT FROM r.pid)
             AND NOT coalesce(bool_and(c.job_id IS NULL) AND r.run_lease / 1000.0 BETWEEN $1 AND $2, false))`,
    (_jobs, _counted, claimsLost) => [claimsLost?.from ?? null, claimsLost?.to ?? null],
  ),
];

/** The event of each new state, as the library writes it (lib/sql/job-events.sql.ts). */
const EVENT_OF_STATE = `CASE t.new_state WHEN 'completed' THEN 'completed' WHEN 'failed' THEN 'failed'
  WHEN 'cancelled' THEN 'cancelled' WHEN 'retryable' THEN 'retrying' WHEN 'scheduled' THEN 'snoozed'
  WHEN 'available' THEN 'released' END`;

/**
 * The durable-event group `chaos` (subscribed to every event of every job): each state change of an
 * attempt (from running), and each workflow step ended by a dependency (from waiting), has its event
 * stored, and the group handled every stored event.
 */
export const EVENT_CHECKS: Check[] = [
  rowsCheck(
    'every state change from running (or of a step ended by a dependency) has its durable event, and no event is stored without one',
    `WITH changed AS (
       SELECT t.job_id, ${EVENT_OF_STATE} AS event, count(*)::int AS n FROM chaos.transitions t
        WHERE t.old_state = 'running' OR (t.old_state = 'waiting' AND t.new_state IN ('cancelled', 'failed'))
        GROUP BY 1, 2
     ), stored AS (
       SELECT job_id, event, count(*)::int AS n FROM awa.job_events WHERE event <> 'rescued' GROUP BY 1, 2
     )
     SELECT job_id, event, c.n AS changes, s.n AS events FROM changed c FULL JOIN stored s USING (job_id, event)
      WHERE c.n IS DISTINCT FROM s.n`,
  )(0, ''),
  rowsCheck(
    "each job's last stored event is in its final state",
    `SELECT j.id, j.state, l.state AS last_event_state FROM awa.all_jobs j
       LEFT JOIN LATERAL (SELECT e.state FROM awa.job_events e WHERE e.job_id = j.id
                           ORDER BY e.tx DESC, e.id DESC LIMIT 1) l ON true
      WHERE l.state IS DISTINCT FROM j.state`,
  )(0, ''),
  rowsCheck(
    'the durable-event group handled every stored event',
    `SELECT e.id, e.job_id, e.event FROM awa.job_events e
      WHERE NOT EXISTS (SELECT FROM chaos.event_deliveries d WHERE d.event_id = e.id)`,
  )(0, ''),
];

/**
 * Runs every invariant check, then `more` (the flow queues'); returns one line per failed check.
 * `counted`: the kind whose handler counts in job.transaction (the second server's has its own).
 */
export async function checkInvariants(
  query: Query,
  jobs: number,
  more: Check[] = [],
  counted: string = CHAOS_KINDS.counted.kind,
  claimsLost: ClaimsLost = null,
): Promise<{ checked: string[]; violations: string[] }> {
  const checked: string[] = [];
  const violations: string[] = [];
  for (const check of [...CHECKS.map((make) => make(jobs, counted, claimsLost)), ...more]) {
    checked.push(check.name);
    for (const problem of await check.run(query)) violations.push(`${check.name}: ${problem}`);
  }
  return { checked, violations };
}
