import { millis, statement } from './sql-statement.js';

/** Advisory-lock namespace (the first int of the two-int form) of instance liveness locks. */
export const LIVENESS_LOCK_NAMESPACE = 618272;

/** Session-level liveness lock of one instance: held for as long as its connection lives. */
export const acquireLivenessLock = statement('acquire_liveness_lock',
  `SELECT pg_try_advisory_lock(${LIVENESS_LOCK_NAMESPACE}, $1::int) AS acquired`);

/** Registers or refreshes an instance ($1 id, $2 hostname, $3 pid, $4 queues, $5 lock key, $6 handlers { kind: queue }). */
export const upsertInstance = statement('upsert_instance', `
  INSERT INTO awa.instances (id, hostname, pid, queues, lock_key, started_at, heartbeat_at, handlers)
  VALUES ($1, $2, $3, $4::text[], $5, now(), now(), coalesce($6::jsonb, '{}'))
  ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), queues = EXCLUDED.queues, lock_key = EXCLUDED.lock_key, handlers = EXCLUDED.handlers`);

export const deleteInstance = statement('delete_instance', `DELETE FROM awa.instances WHERE id = $1`);

/**
 * Instances other than $1 that are not live: their row is older than $2 ms, or ($3 = true) their
 * liveness lock is no longer held by any session.
 */
export const findDeadInstances = statement('find_dead_instances', `
  SELECT i.id FROM awa.instances i
   WHERE i.id <> $1
     AND (i.heartbeat_at < now() - ${millis('$2')}
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
