// After a server comes back (the restart of the first, the crash of the second): how long until every
// live instance has its session there again and a maintenance leader holds that database's lock.
import type { Query } from './chaos-invariants.js';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Holders of the maintenance leader lock (MAINTENANCE_LOCK_KEY) in this database, as pg_locks shows a one-bigint
 * advisory lock.
 */
const LEADER_HELD = `SELECT count(*)::int AS n FROM pg_locks
  WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = 6182721100001
    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

/**
 * Ms from now until the instances' sessions (`live()` of them at least) are back in the database of
 * `query` and one leader holds the lock; null if not within 30 s.
 */
export async function reconnectMs(query: Query, live: () => number): Promise<number | null> {
  const upAt = Date.now();
  for (const until = Date.now() + 30_000; Date.now() < until; await sleep(100)) {
    try {
      const [{ n: sessions }] = await query(
        `SELECT count(DISTINCT application_name)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name LIKE 'awa:%'`,
      );
      const [{ n: leaders }] = await query(LEADER_HELD);
      if (sessions >= live() && leaders === 1) return Date.now() - upAt;
    } catch {
      // still coming back
    }
  }
  return null;
}
