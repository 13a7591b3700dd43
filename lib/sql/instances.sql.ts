import { millis, statement } from './sql-statement.js';

/** Advisory-lock namespace (the first int of the two-int form) of instance liveness locks. */
export const LIVENESS_LOCK_NAMESPACE = 618272;

/** Session-level liveness lock of one instance: held for as long as its connection lives. */
export const acquireLivenessLock = statement('acquire_liveness_lock',
  `SELECT pg_try_advisory_lock(${LIVENESS_LOCK_NAMESPACE}, $1::int) AS acquired`);

/**
 * Registers or refreshes an instance ($1 id, $2 hostname, $3 pid, $4 queues, $5 lock key,
 * $6 settings: the options rescues of its leases follow, see InstanceSettings).
 */
export const upsertInstance = statement('upsert_instance', `
  INSERT INTO awa.instances (id, hostname, pid, queues, lock_key, settings, started_at, heartbeat_at)
  VALUES ($1, $2, $3, $4::text[], $5, $6::jsonb, now(), now())
  ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), queues = EXCLUDED.queues, lock_key = EXCLUDED.lock_key,
    settings = EXCLUDED.settings`);

export const deleteInstance = statement('delete_instance', `DELETE FROM awa.instances WHERE id = $1`);

/**
 * Instances other than $1 that are not live: their row is older than their own heartbeatStaleAfter
 * (or $2 ms, for rows without settings), or ($3 = true) their liveness lock is no longer held.
 */
export const findDeadInstances = statement('find_dead_instances', `
  SELECT i.id FROM awa.instances i
   WHERE i.id <> $1
     AND (i.heartbeat_at < now() - ${millis(`coalesce((i.settings ->> 'heartbeatStaleAfter')::float8, $2::float8)`)}
          OR ($3::boolean AND NOT EXISTS (
                SELECT 1 FROM pg_locks pl
                 WHERE pl.locktype = 'advisory' AND pl.granted
                   AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                   AND pl.classid = ${LIVENESS_LOCK_NAMESPACE}::oid AND pl.objid = i.lock_key::oid AND pl.objsubid = 2)))`);

/** Forgets dead instances ($1) once none of their leases is left. */
export const forgetDeadInstances = statement('forget_dead_instances', `
  DELETE FROM awa.instances i
   WHERE i.id = ANY($1::text[])
     AND NOT EXISTS (SELECT 1 FROM awa.active_leases l WHERE l.instance_id = i.id)`);
