import { COUNTED_ERROR, FLAKY_ERROR } from './chaos-config.js';
import { INSTANCE_DIED_PREFIX, type Query } from './chaos-invariants.js';
import { RescueErrors } from 'nestjs-awa';

/** One SIGKILL: the victim's pid, when (database clock), and the leases it held then. */
export interface KillRecord {
  pid: number;
  at: Date;
  jobIds: string[];
  runLeases: string[];
}

/** One kill's recovery: seconds into the run, jobs it left behind, ms until all ran again, how freed. */
export interface KillRecovery {
  atSeconds: number;
  jobs: number;
  ms: number;
  freedBy: string[];
}

export interface RecoveryFigures {
  /** Kills whose victim held leases. */
  withJobs: number;
  perKill: KillRecovery[];
  /** Per kill: ms from the kill until every job it held was running again elsewhere (or failed for good). */
  perKillMs: number[];
  p50Ms: number | null;
  maxMs: number | null;
  /** How the killed leases were freed, by error text kind. */
  freedBy: Record<string, number>;
}

export function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The kind of error text `e`, with ERROR_KIND_VALUES as $1..$6. */
const errorKind = (e: string) => `CASE
  WHEN ${e} = $1 THEN 'heartbeat stale'
  WHEN ${e} = $2 THEN 'hard deadline'
  WHEN ${e} LIKE $3 || '%' THEN 'instance died'
  WHEN ${e} = $4 THEN 'released on shutdown'
  WHEN ${e} = $5 THEN 'flaky handler error'
  WHEN ${e} = $6 THEN 'released unstarted'
  WHEN ${e} = '${COUNTED_ERROR}' THEN 'counted handler: job.transaction rolled back'
  ELSE 'other' END`;
const ERROR_KIND_VALUES = [
  RescueErrors.heartbeatStale,
  RescueErrors.deadlineExceeded,
  INSTANCE_DIED_PREFIX,
  RescueErrors.releasedOnShutdown,
  FLAKY_ERROR,
  RescueErrors.releasedUnstarted,
];

/**
 * Jobs an enqueue handed to an idle worker (queue option handoff) and done in that attempt: their
 * first attempt began in the insert's transaction, and a later attempt would have moved attempted_at.
 */
export async function handedOffCount(query: Query): Promise<number> {
  const [handed] = (await query(
    `SELECT count(*)::int AS n FROM awa.all_jobs WHERE attempt = 1 AND attempted_at = created_at`,
  )) as Array<{ n: number }>;
  return handed?.n ?? 0;
}

/**
 * Error entries by kind. "instance died" entries are split by whether the named instance was one
 * the run killed: any other (a live instance whose session dropped in the restart) is a false alarm.
 */
export async function errorCounts(query: Query, killedPids: number[]): Promise<Record<string, number>> {
  const rows = await query(
    `SELECT kind, count(*)::int AS n FROM (
       SELECT CASE WHEN k = 'instance died' AND NOT coalesce(p.pid = ANY($7::int[]), false)
                   THEN 'instance died (a live instance)' ELSE k END AS kind
         FROM (SELECT e->>'error' AS e FROM awa.all_jobs j, jsonb_array_elements(j.errors) e) x
         CROSS JOIN LATERAL (SELECT ${errorKind('x.e')} AS k) kk
         LEFT JOIN chaos.instance_pids p ON x.e = $3 || p.instance_id) y
      GROUP BY kind ORDER BY kind`,
    [...ERROR_KIND_VALUES, killedPids],
  );
  return Object.fromEntries(rows.map((r) => [r.kind, r.n]));
}

/** Time from each kill until the jobs it held were claimed again (or failed for good). */
export async function recoveryFigures(query: Query, kills: KillRecord[]): Promise<RecoveryFigures> {
  const perKill: KillRecovery[] = [];
  const freedBy: Record<string, number> = {};
  const [{ t0 }] = await query('SELECT min(created_at) AS t0 FROM awa.all_jobs');
  for (const kill of kills.filter((k) => k.jobIds.length > 0)) {
    const rows = await query(
      `SELECT l.job_id::text,
              (SELECT state FROM awa.all_jobs WHERE id = l.job_id) AS state,
              (SELECT ${errorKind(`(j.errors -> (SELECT count(*)::int FROM chaos.claims c WHERE c.job_id = l.job_id AND c.run_lease < l.run_lease) ->> 'error')`)}
                 FROM awa.all_jobs j WHERE j.id = l.job_id) AS freed_by,
              (SELECT min(at) FROM chaos.claims c WHERE c.job_id = l.job_id AND c.run_lease > l.run_lease) AS
                reclaimed_at,
              (SELECT min(at) FROM chaos.transitions t WHERE t.job_id = l.job_id AND t.run_lease = l.run_lease
                  AND t.new_state = 'completed') AS completed_at,
              (SELECT min(at) FROM chaos.transitions t WHERE t.job_id = l.job_id AND t.run_lease = l.run_lease
                  AND t.new_state = 'failed') AS failed_at
         FROM unnest($7::bigint[], $8::bigint[]) AS l(job_id, run_lease)`,
      [...ERROR_KIND_VALUES, kill.jobIds, kill.runLeases],
    );
    let worst = 0;
    let counted = 0;
    const paths = new Set<string>();
    for (const row of rows) {
      // Ended by the victim itself between the snapshot and the kill: completed, or failed by its handler.
      if (row.completed_at || row.freed_by === 'flaky handler error') continue;
      const recovered: Date | null = row.reclaimed_at ?? row.failed_at;
      if (!recovered) continue; // never recovered: the invariant checks report the job
      counted++;
      freedBy[row.freed_by] = (freedBy[row.freed_by] ?? 0) + 1;
      paths.add(row.freed_by);
      worst = Math.max(worst, recovered.getTime() - kill.at.getTime());
    }
    if (counted > 0) {
      const atSeconds = t0 ? (kill.at.getTime() - (t0 as Date).getTime()) / 1000 : 0;
      perKill.push({ atSeconds, jobs: counted, ms: worst, freedBy: [...paths] });
    }
  }
  const perKillMs = perKill.map((k) => k.ms);
  return {
    withJobs: perKill.length,
    perKill,
    perKillMs,
    p50Ms: percentile(perKillMs, 50),
    maxMs: percentile(perKillMs, 100),
    freedBy,
  };
}

/** Jobs per second from the first enqueue to the last finalization, and the busiest second. */
export async function throughput(
  query: Query,
): Promise<{ startedAt: Date | null; seconds: number; jobsPerSecond: number; peakPerSecond: number }> {
  const [span] = await query(
    `SELECT count(*)::int AS jobs, min(created_at) AS started_at,
            extract(epoch FROM max(finalized_at) - min(created_at))::float8 AS seconds FROM awa.all_jobs`,
  );
  const [peak] = await query(
    `SELECT coalesce(max(n), 0)::int AS n FROM (
       SELECT count(*) AS n FROM chaos.transitions WHERE new_state IN ('completed', 'failed')
        GROUP BY date_trunc('second', at)) s`,
  );
  const seconds = Number(span.seconds ?? 0);
  return {
    startedAt: span.started_at,
    seconds,
    jobsPerSecond: seconds > 0 ? span.jobs / seconds : 0,
    peakPerSecond: peak.n,
  };
}
