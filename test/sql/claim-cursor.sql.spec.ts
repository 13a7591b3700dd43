import type pg from 'pg';
import { claimSql } from '../../lib/sql/index.js';
import type { ClaimAfter } from '../../lib/sql/claim.sql.js';
import type { SqlParams } from '../../lib/sql/sql-statement.js';
import { ClaimCursor } from '../../lib/worker/claim-cursor.js';
import { planNodes, explainedPlan } from '../support/query-plan.js';
import { useSqlFixture } from './sql-fixture.js';

/**
 * Why claims read from a cursor (ClaimCursor): while a snapshot older than the claims is held, the
 * index entries of the jobs they took cannot be marked dead, and a claim that reads the index from
 * its start visits the table for every one of them. A claim from the cursor starts after them.
 * Real PostgreSQL, real snapshot; buffers counted by EXPLAIN ANALYZE, not time.
 */
describe('the claim from a cursor while an old snapshot is held', () => {
  const f = useSqlFixture();
  const KIND = 'k';
  let holder: pg.Client;

  beforeEach(async () => {
    // One run_at for all, as one enqueueMany() gives its jobs: the cursor must tell them apart by id.
    await f.sql(
      `INSERT INTO awa.jobs (kind, queue, state, run_at)
       SELECT $1, 'default', 'available', now() - interval '1 hour' FROM generate_series(1, 3000)`,
      [KIND],
    );
    holder = await f.client();
    await holder.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await holder.query('SELECT count(*) FROM awa.jobs'); // the snapshot is taken here, and held
  });
  afterEach(async () => {
    await holder.query('ROLLBACK');
    await holder.end();
  });

  /** The claim of 10 jobs with `after`, analyzed and rolled back: the jobs it took, and its index scan's buffers. */
  async function analyzeClaim(after: ClaimAfter): Promise<{ ids: string[]; buffers: number }> {
    const client = await f.client();
    try {
      await client.query('BEGIN');
      const values: SqlParams<typeof claimSql.claimJobs> = ['default', [KIND], 10, 'instance-x', 0, ...after];
      const { rows } = await client.query({
        text: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${claimSql.claimJobs.text}`,
        values,
      });
      const plan = explainedPlan(rows);
      const scan = planNodes(plan).find((n) => n['Index Name'] === 'jobs_claim_kind_idx')!;
      const buffers = Number(scan['Shared Hit Blocks']) + Number(scan['Shared Read Blocks']);
      await client.query('ROLLBACK');
      await client.query('BEGIN');
      const claimed = await f.run(claimSql.claimJobs, values, client);
      await client.query('ROLLBACK');
      return { ids: claimed.map((r) => r.id).sort(), buffers };
    } finally {
      await client.end();
    }
  }

  it('reads past none of the entries of the jobs claimed since, and takes the same jobs', async () => {
    const cursor = new ClaimCursor(() => 0); // the clock stands still: no whole read is due after the first
    for (let claimed = 0; claimed < 2_500;) {
      const rows = await f.run(claimSql.claimJobs, ['default', [KIND], 500, 'instance-a', 0, ...cursor.next([KIND])]);
      cursor.claimed(rows, 1);
      claimed += rows.length;
    }
    const whole = await analyzeClaim(claimSql.fromIndexStart([KIND]));
    const fromCursor = await analyzeClaim(cursor.next([KIND]));
    expect(fromCursor.ids).toHaveLength(10);
    expect(fromCursor.ids).toEqual(whole.ids);
    // The whole read visits the table for each of the 2,500 claimed jobs' entries; the cursor's starts after them.
    expect(whole.buffers).toBeGreaterThan(10 * fromCursor.buffers);
  });
});
