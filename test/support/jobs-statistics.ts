import type pg from 'pg';
import { withConnection } from './test-database.js';
import { waitFor } from './wait-for.js';

/**
 * Changes to awa.jobs that the statistics collector has counted when they return. A backend sends
 * its counts at most once a second (an idle one after up to 10 s); an ANALYZE before they arrive
 * would be added to, and a TRUNCATE's reset can arrive after later counts, so these change the table
 * with INSERT and DELETE only. Each call runs on a connection of its own, closed after.
 */
export interface JobsStatistics {
  /** Runs `text` (an INSERT or DELETE of awa.jobs) and waits until the collector counted its rows. */
  change(text: string, values?: unknown[]): Promise<void>;
  insertJobs(n: number): Promise<void>;
  /** Vacuumed and analyzed while empty, its pages kept (vacuum_truncate is off): 0 rows per page. */
  analyzedWhileEmpty(): Promise<void>;
}

export function jobsStatistics(url: () => string): JobsStatistics {
  const on = <T>(body: (client: pg.Client) => Promise<T>): Promise<T> => withConnection(url(), body);
  const counted = async () =>
    on(async (c) =>
      Number(
        (await c.query(`SELECT n_tup_ins + n_tup_del AS n FROM pg_stat_user_tables WHERE relid = 'awa.jobs'::regclass`))
          .rows[0]?.n,
      ),
    );
  const change = async (text: string, values?: unknown[]) => {
    const before = await counted();
    const { rowCount } = await on((c) => c.query(text, values));
    await waitFor(async () => (await counted()) >= before + (rowCount ?? 0), 30_000, 'the collector to count', 250);
  };
  const insertJobs = (n: number) =>
    change(`INSERT INTO awa.jobs (kind, queue) SELECT 'k', 'q' FROM generate_series(1, $1::int)`, [n]);
  return {
    change,
    insertJobs,
    async analyzedWhileEmpty() {
      await insertJobs(5_000);
      await change('DELETE FROM awa.jobs');
      await on((c) => c.query('VACUUM ANALYZE awa.jobs'));
    },
  };
}
