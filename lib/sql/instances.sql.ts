import { millis, statement } from './sql-statement.js';

/** Advisory-lock namespace (the first int of the two-int form) of instance liveness locks. */
export const LIVENESS_LOCK_NAMESPACE = 618272;

/** Session-level liveness lock of one instance: held for as long as its connection lives. */
export const acquireLivenessLock = statement<[lockKey: number], { acquired: boolean }>(
  'acquire_liveness_lock',
  `SELECT pg_try_advisory_lock(${LIVENESS_LOCK_NAMESPACE}, $1::int) AS acquired`,
);

/**
 * Registers or refreshes an instance ($1 id, $2 hostname, $3 pid, $4 queues, $5 lock key,
 * $6 settings: the options rescues of its leases follow, see InstanceSettings; $7 handlers
 * { kind: queue }, for the leader's unhandled-kinds check; $8 the names of the schedules it declares
 * in code, so that none is pruned while a live instance declares it).
 */
export const upsertInstance = statement<
  [
    id: string,
    hostname: string,
    pid: number,
    queues: string[],
    lockKey: number,
    settings: string,
    handlers: string | null,
    schedules: string[] | null,
  ]
>(
  'upsert_instance',
  `
  INSERT INTO awa.instances (id, hostname, pid, queues, lock_key, settings, started_at, heartbeat_at, handlers,
                             schedules)
  VALUES ($1, $2, $3, $4::text[], $5, $6::jsonb, now(), now(), coalesce($7::jsonb, '{}'), coalesce($8::text[], '{}'))
  ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), queues = EXCLUDED.queues, lock_key = EXCLUDED.lock_key,
    settings = EXCLUDED.settings, handlers = EXCLUDED.handlers, schedules = EXCLUDED.schedules`,
);

export const deleteInstance = statement<[id: string]>('delete_instance', `DELETE FROM awa.instances WHERE id = $1`);

/** The instance session's liveness probe: any answer means the connection still works. */
export const probeSession = statement<[], { alive: number }>('probe_session', `SELECT 1 AS alive`);

/**
 * Ends this instance's previous session backend ($1 pid, $2 its application_name) if it lingers
 * (a half-open connection the server has not noticed yet): it still holds the old locks.
 */
export const terminateStaleSession = statement<[pid: number, applicationName: string], { terminated: boolean }>(
  'terminate_stale_session',
  `
  SELECT pg_terminate_backend(a.pid) AS terminated FROM pg_stat_activity a
   WHERE a.pid = $1 AND a.application_name = $2 AND a.pid <> pg_backend_pid()`,
);

/**
 * The staleness limit of instance row `i`: its own heartbeatStaleAfter, or `fallback` (a parameter, in
 * ms) for rows written before settings were stored.
 */
export const staleAfter = (fallback: string) =>
  millis(`coalesce((i.settings ->> 'heartbeatStaleAfter')::float8, ${fallback}::float8)`);

const STALE_AFTER = staleAfter('$2');

/** An instance findDeadInstances suspects; `stale`: its row is past heartbeatStaleAfter. */
export interface DeadInstanceRow {
  id: string;
  stale: boolean;
}

/**
 * Instances other than $1 that may not be live: their row is older than their own
 * heartbeatStaleAfter, or $2 ms for rows without settings (`stale`), or ($3 = true) their liveness
 * lock is no longer held by any session.
 */
export const findDeadInstances = statement<[self: string, staleAfterMs: number, checkLocks: boolean], DeadInstanceRow>(
  'find_dead_instances',
  `
  SELECT i.id, i.heartbeat_at < now() - ${STALE_AFTER} AS stale FROM awa.instances i
   WHERE i.id <> $1
     AND (i.heartbeat_at < now() - ${STALE_AFTER}
          OR ($3::boolean AND NOT EXISTS (
                SELECT 1 FROM pg_locks pl
                 WHERE pl.locktype = 'advisory' AND pl.granted
                   AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND pl.classid = ${LIVENESS_LOCK_NAMESPACE}::oid 
                   AND pl.objid = i.lock_key::oid AND pl.objsubid = 2)))`,
);

/** Forgets dead instances ($1) once none of their leases is left. */
export const forgetDeadInstances = statement<[ids: string[]]>(
  'forget_dead_instances',
  `
  DELETE FROM awa.instances i
   WHERE i.id = ANY($1::text[])
     AND NOT EXISTS (SELECT 1 FROM awa.active_leases l WHERE l.instance_id = i.id)`,
);
