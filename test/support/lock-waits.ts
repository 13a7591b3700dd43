import type { Exec } from './job-factory.js';
import { waitFor } from './wait-for.js';

/**
 * Waits until a backend of `exec`'s database waits for a lock (a row or transaction lock another one
 * holds): backend `pid`, or `count` (default 1) whose running statement contains `statement`. Only
 * that database's: the spec files running beside it on the same server wait on their own locks.
 * A forced interleaving goes on from there.
 */
export function waitForLockWait(
  exec: Exec,
  who: { pid: number } | { statement: string; count?: number },
  what: string,
) {
  const [condition, value] = 'pid' in who ? ['pid = $1', who.pid] : [`strpos(query, $1) > 0`, who.statement];
  return waitFor(
    async () =>
      (
        await exec(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND datname = current_database()
              AND ${condition}`,
          [value],
        )
      )[0].n >= ('count' in who ? (who.count ?? 1) : 1),
    10_000,
    what,
  );
}
