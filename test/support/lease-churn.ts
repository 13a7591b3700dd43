import type pg from 'pg';
import { withConnection } from './test-database.js';
import { waitFor } from './wait-for.js';

/** awa.active_leases's rows as the statistics collector counts them. */
export interface LeaseCounts {
  live: number;
  dead: number;
}

/**
 * Dead rows in awa.active_leases that the statistics collector has counted. A backend sends its
 * counts when its connection ends at the latest, so each change runs on a connection of its own,
 * closed before the counts are awaited.
 */
export interface LeaseChurn {
  /** Table settings under which autovacuum never visits the table, while it stays enabled on it. */
  readonly autovacuumAway: string;
  /** Adds `live` leases and `dead` dead ones, and waits until the collector counted them. */
  leave(live: number, dead: number): Promise<void>;
  /** Empties and vacuums the table: no live or dead rows, counted. */
  vacuumed(): Promise<void>;
  counts(): Promise<LeaseCounts>;
  /** How many times the table was vacuumed by hand. */
  vacuumCount(): Promise<number>;
}

export function leaseChurn(url: () => string): LeaseChurn {
  const on = <T>(body: (client: pg.Client) => Promise<T>): Promise<T> => withConnection(url(), body);
  const stat = async (column: string) =>
    on(async (c) =>
      Number(
        (await c.query(`SELECT ${column} AS n FROM pg_stat_user_tables WHERE relid = 'awa.active_leases'::regclass`))
          .rows[0]?.n,
      ),
    );
  const counts = async (): Promise<LeaseCounts> => ({ live: await stat('n_live_tup'), dead: await stat('n_dead_tup') });
  const counted = async (expected: LeaseCounts) => {
    let seen: LeaseCounts | undefined;
    await waitFor(
      async () => {
        seen = await counts();
        return seen.live === expected.live && seen.dead === expected.dead;
      },
      30_000,
      `the collector to count ${JSON.stringify(expected)} lease rows`,
      100,
    ).catch((error: Error) => {
      throw new Error(`${error.message} (last seen: ${JSON.stringify(seen)})`);
    });
  };
  return {
    autovacuumAway:
      'autovacuum_vacuum_threshold = 2000000000, autovacuum_vacuum_insert_threshold = -1, ' +
      'autovacuum_analyze_threshold = 2000000000',
    async leave(live, dead) {
      const before = await counts();
      await on(async (c) => {
        const [{ from }] = (await c.query(`SELECT coalesce(max(job_id), 0)::int AS from FROM awa.active_leases`)).rows;
        await c.query(
          `INSERT INTO awa.active_leases (job_id, run_lease, instance_id)
           SELECT $1::int + g, 1, 'churn' FROM generate_series(1, $2::int) g`,
          [from, live + dead],
        );
        await c.query(`DELETE FROM awa.active_leases WHERE job_id > $1::int AND job_id <= $1::int + $2::int`, [
          from,
          dead,
        ]);
      });
      await counted({ live: before.live + live, dead: before.dead + dead });
    },
    async vacuumed() {
      // Counted before the VACUUM: counts sent after its report would be added to it.
      const before = await counts();
      await on((c) => c.query('DELETE FROM awa.active_leases'));
      await counted({ live: 0, dead: before.dead + before.live });
      // Every page read: a vacuum that skips pages estimates their live rows from the last one's density.
      await on((c) => c.query('VACUUM (DISABLE_PAGE_SKIPPING) awa.active_leases'));
      await counted({ live: 0, dead: 0 });
    },
    counts,
    vacuumCount: () => stat('vacuum_count'),
  };
}
