import { MAINTENANCE_LEASE, MAINTENANCE_LOCK_KEY } from '../awa.constants.js';
import { LIVENESS_LOCK_NAMESPACE } from '../sql/instances.sql.js';
import { JOB_COLUMNS, type JobRow } from '../sql/jobs.sql.js';
import { msAgo, statement } from '../sql/sql-statement.js';

/** Completed and failed jobs of one queue in one minute; queue NULL for a minute without any. */
export interface ThroughputRow {
  queue: string | null;
  minute: Date;
  completed: number;
  failed: number;
}

/**
 * Per-minute completions and failures of the last $1 minutes, by finalized_at (job_history_finalized_idx),
 * reading only the jobs finalized from $2 on (NULL: the whole window; ThroughputReader keeps the
 * settled minutes). Every minute has a row, so the minutes are those of the database clock, not the
 * app's; those before $2 come with no queue and zeros.
 */
export const throughput = statement<[minutes: number, since: Date | null], ThroughputRow>(
  'dashboard_throughput',
  `
  WITH finished AS (
    SELECT queue, date_trunc('minute', finalized_at) AS minute,
           count(*) FILTER (WHERE state = 'completed')::int AS completed,
           count(*) FILTER (WHERE state = 'failed')::int AS failed
      FROM awa.all_jobs
     WHERE finalized_at IS NOT NULL
       AND finalized_at >= date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute'
       AND finalized_at >= coalesce($2::timestamptz, '-infinity')
     GROUP BY 1, 2
  )
  SELECT f.queue, m.minute, coalesce(f.completed, 0) AS completed, coalesce(f.failed, 0) AS failed
    FROM generate_series(date_trunc('minute', now()) - ($1::int - 1) * interval '1 minute',
                         date_trunc('minute', now()), interval '1 minute') AS m (minute)
    LEFT JOIN finished f ON f.minute = m.minute
   ORDER BY m.minute, f.queue`,
);

/**
 * The filter of the job list and its count: each parameter NULL means "any". $1 states, $2 queues,
 * $3 kinds, $4 tags (has all), $5 args containment (jsonb), $6 text searched in args and kind, $7 ids.
 */
const JOB_FILTER = `
  ($1::text[] IS NULL OR state = ANY ($1::text[]))
  AND ($2::text[] IS NULL OR queue = ANY ($2::text[]))
  AND ($3::text[] IS NULL OR kind = ANY ($3::text[]))
  AND ($4::text[] IS NULL OR tags @> $4::text[])
  AND ($5::jsonb IS NULL OR args @> $5::jsonb)
  AND ($6::text IS NULL OR strpos(lower(args::text), lower($6::text)) > 0 OR strpos(lower(kind), lower($6::text)) > 0)
  AND ($7::bigint[] IS NULL OR id = ANY ($7::bigint[]))`;

export type JobFilterParams = [
  states: string[] | null,
  queues: string[] | null,
  kinds: string[] | null,
  tags: string[] | null,
  args: string | null,
  search: string | null,
  ids: string[] | null,
];

/** The id above every job (the newest id + 1): where a first page or a count starts. */
export const jobsTop = statement<[], { top: string }>(
  'dashboard_jobs_top',
  `SELECT (coalesce(max(id), 0) + 1)::text AS top FROM awa.all_jobs`,
);

/**
 * One page of jobs matching the filter, newest first: those below cursor $8 (the last id of the
 * previous page, or jobsTop) and at or above $10, at most $9 rows. Keyset pagination down the
 * primary key, so a deep page costs what the first does; the floor $10 bounds the rows examined
 * when few jobs match (a search), where the walk would otherwise go down the whole table. Both
 * bounds are parameters, never `$8 IS NULL OR ...`: the generic plan of the prepared statement
 * would then read the whole table and sort it. (Ordered by j.id: a bare `id` is the text column of
 * JOB_COLUMNS.)
 */
export const listJobs = statement<[...JobFilterParams, before: string, limit: number, floor: string], JobRow>(
  'dashboard_list_jobs',
  `
  SELECT ${JOB_COLUMNS} FROM awa.all_jobs j
   WHERE j.id < $8::bigint AND j.id >= $10::bigint AND ${JOB_FILTER}
   ORDER BY j.id DESC
   LIMIT $9::int`,
);

/**
 * How many jobs match the filter among those with id >= $9, counting at most $8: both the count and
 * the rows examined are bounded (the count is capped, not estimated).
 */
export const countJobs = statement<[...JobFilterParams, cap: number, floor: string], { count: number }>(
  'dashboard_count_jobs',
  `SELECT count(*)::int AS count
     FROM (SELECT 1 FROM awa.all_jobs WHERE id >= $9::bigint AND ${JOB_FILTER} LIMIT $8::int) matching`,
);

/** The lease of a running job. */
export interface LeaseRow {
  instance_id: string;
  run_lease: string;
  claimed_at: Date;
  heartbeat_at: Date;
  heartbeat_age_ms: number;
  deadline_at: Date | null;
}

export const jobLease = statement<[id: string], LeaseRow>(
  'dashboard_job_lease',
  `
  SELECT instance_id, run_lease::text, claimed_at, heartbeat_at, ${msAgo('heartbeat_at')} AS heartbeat_age_ms,
         deadline_at
    FROM awa.active_leases WHERE job_id = $1::bigint
   ORDER BY run_lease DESC`,
);

/** A registered instance, whether it leads maintenance, and the leases it holds. */
export interface InstanceRow {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  started_at: Date;
  heartbeat_at: Date;
  heartbeat_age_ms: number;
  leases: number;
  leader: boolean;
}

/**
 * The leader is the holder of the live awa.leader row (connectionMode 'transaction-pooler'), or
 * (direct connections) the instance whose session holds both its own liveness lock and the
 * maintenance advisory lock: a bigint key, which pg_locks splits into classid (high) and objid (low).
 */
export const listInstances = statement<[], InstanceRow>(
  'dashboard_list_instances',
  `
  WITH leader_pids AS (
    SELECT pid FROM pg_locks
     WHERE locktype = 'advisory' AND granted AND objsubid = 1
       AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND classid = (${MAINTENANCE_LOCK_KEY}::bigint >> 32)::oid
       AND objid = (${MAINTENANCE_LOCK_KEY}::bigint & 4294967295)::oid
  ), lock_leader AS (
    SELECT l.objid::bigint AS lock_key FROM pg_locks l JOIN leader_pids p ON p.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2 AND l.classid = ${LIVENESS_LOCK_NAMESPACE}::oid
  ), lease_counts AS (
    SELECT instance_id, count(*)::int AS leases FROM awa.active_leases GROUP BY instance_id
  )
  SELECT i.id, i.hostname, i.pid, i.queues, i.started_at, i.heartbeat_at,
         ${msAgo('i.heartbeat_at')} AS heartbeat_age_ms,
         coalesce(n.leases, 0) AS leases,
         (EXISTS (SELECT FROM awa.leader r
                   WHERE r.name = '${MAINTENANCE_LEASE}' AND r.holder = i.id AND r.expires_at > now())
          OR EXISTS (SELECT FROM lock_leader k WHERE k.lock_key = i.lock_key)) AS leader
    FROM awa.instances i
    LEFT JOIN lease_counts n ON n.instance_id = i.id
   ORDER BY i.started_at, i.id`,
);
