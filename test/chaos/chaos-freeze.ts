import type { Query } from './chaos-invariants.js';
import type { ChaosProcess } from './chaos-process.js';
import type { TcpProxy } from '../support/tcp-proxy.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The freeze fault: one worker's every connection to PostgreSQL stalls (no data, no FIN), then thaws;
 * or, `process`, the worker itself is stopped (SIGSTOP) and continued (SIGCONT), its connections open.
 */
export interface FreezeRecord {
  pid: number;
  /** When it began (database clock). */
  at: Date;
  /** Seconds into the run (from the first enqueue). */
  atSeconds?: number;
  ms: number;
  /** Leases the worker held when it froze. */
  jobsHeld: number;
  /** Of those, how many were rescued while it was frozen (the others it kept). */
  rescued: number;
  /** The process leading maintenance at the end of the freeze (null: none). */
  leaderPid: number | null;
  /** Results the worker wrote after the thaw that matched no lease any more (its log's "no longer held"). */
  lateResultsDiscarded?: number;
}

/** MAINTENANCE_LOCK_KEY, as run-chaos.ts's LEADER_HELD spells it. */
const LEADER_LOCK_KEY = '6182721100001';

/**
 * Freezes the ready worker holding the most leases (or none, if all are idle: a quiet moment of a
 * fast run must not skip the fault), while another is ready to take its jobs, for `ms`, through its
 * proxy: existing connections and new ones. Not the maintenance leader: the
 * server keeps a frozen leader's lock until its TCP connection is seen dead, so no one would
 * rescue anything until the thaw; the fault is meant to make the others rescue its jobs meanwhile.
 * Undefined if no worker qualifies.
 */
export async function freezeOne(
  workers: ChaosProcess[],
  proxyOf: (worker: ChaosProcess) => TcpProxy | undefined,
  query: Query,
  ms: number,
  log: (line: string) => void,
  mode: 'connections' | 'process' = 'connections',
): Promise<FreezeRecord | undefined> {
  const ready = workers.filter((w) => w.alive && !w.expectedExit && w.readyAt !== undefined);
  if (ready.length < 2) return undefined;
  const held = await query(
    `SELECT p.pid, clock_timestamp() AS at,
            coalesce(array_agg(l.job_id::text || ':' || l.run_lease::text) FILTER (WHERE l.job_id IS NOT NULL), '{}') AS leases
       FROM chaos.instance_pids p LEFT JOIN awa.active_leases l ON l.instance_id = p.instance_id
      WHERE p.pid = ANY($1::int[])
        AND NOT EXISTS (SELECT 1 FROM pg_locks pl JOIN pg_stat_activity a ON a.pid = pl.pid
                         WHERE pl.locktype = 'advisory' AND pl.granted AND pl.objsubid = 1
                           AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                           AND ((pl.classid::bigint << 32) | pl.objid::bigint) = $2
                           AND a.application_name = 'awa:' || p.instance_id)
      GROUP BY p.pid ORDER BY count(l.job_id) DESC LIMIT 1`,
    [ready.map((w) => w.pid), LEADER_LOCK_KEY],
  );
  const victim = ready.find((w) => w.pid === held[0]?.pid);
  const proxy = victim && proxyOf(victim);
  if (!victim || !proxy) return undefined;
  const leases: string[] = held[0].leases;
  const what = mode === 'process' ? 'stopped (SIGSTOP) worker' : 'froze worker';
  if (mode === 'process') victim.kill('SIGSTOP');
  else proxy.freeze(undefined, { newOnes: true });
  log(
    `chaos: ${what} ${victim.pid}${mode === 'process' ? '' : "'s connections"} holding ${leases.length} job(s) for ${ms} ms`,
  );
  await sleep(ms);
  // Its own writes are stalled, so a lease gone by now was taken from it (rescued).
  const [{ n: rescued }] = await query(
    `SELECT count(*)::int AS n FROM unnest($1::text[]) x(lease)
      WHERE NOT EXISTS (SELECT 1 FROM awa.active_leases l WHERE l.job_id::text || ':' || l.run_lease::text = x.lease)`,
    [leases],
  );
  const [leader] = await query(
    `SELECT p.pid FROM pg_locks pl JOIN pg_stat_activity a ON a.pid = pl.pid
       JOIN chaos.instance_pids p ON a.application_name = 'awa:' || p.instance_id
      WHERE pl.locktype = 'advisory' AND pl.granted AND pl.objsubid = 1
        AND ((pl.classid::bigint << 32) | pl.objid::bigint) = $1
        AND pl.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [LEADER_LOCK_KEY],
  );
  if (mode === 'process') victim.kill('SIGCONT');
  else proxy.thaw();
  log(
    `chaos: ${mode === 'process' ? 'continued' : 'thawed'} worker ${victim.pid}; ${rescued} of its ${leases.length} job(s) ` +
      `had been rescued; leader then: ${leader?.pid ?? 'none'}`,
  );
  return { pid: victim.pid, at: held[0].at, ms, jobsHeld: leases.length, rescued, leaderPid: leader?.pid ?? null };
}
