import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { workerSql } from '../../lib/sql/index.js';
import * as workflowSql from '../../lib/sql/workflow.sql.js';
import { graphJob } from '../support/job-factory.js';
import { useSqlFixture } from './sql-fixture.js';

interface Diamond {
  sink: string;
  a: string;
  b: string;
  leaseA: string;
  leaseB: string;
}

/**
 * The two dependencies of one dependent complete in overlapping transactions, in the orders that make
 * the later statement's snapshot older than the earlier one's commit: it must take its share off the
 * count as committed (the lock of the dependent, then the re-read of its row), never off the count its
 * snapshot saw. The orders are forced with open transactions and row locks, not timing.
 */
describe('workflow dependencies completing in overlapping transactions', () => {
  const f = useSqlFixture();

  /** A diamond's last two levels: `sink` waits for a and b, both running with a lease. */
  const diamond = async (): Promise<Diamond> => {
    const [a, b, sink] = (
      await f.run(workflowSql.insertGraph, [
        JSON.stringify([graphJob('step', 0), graphJob('step', 0), graphJob('step', 2)]),
        randomUUID(),
        JSON.stringify([
          { dependent: 2, dependency: 0, ref: 'a', policy: 'cancel' },
          { dependent: 2, dependency: 1, ref: 'b', policy: 'cancel' },
        ]),
      ])
    ).map((r) => r.id);
    await f.sql(
      `WITH claimed AS (
         UPDATE awa.jobs SET state = 'running', attempt = 1, run_lease = 1 WHERE id = ANY($1::bigint[]) RETURNING id
       )
       INSERT INTO awa.active_leases (job_id, run_lease, instance_id) SELECT id, 1, 'i' FROM claimed`,
      [[a, b]],
    );
    return { sink: sink!, a: a!, b: b!, leaseA: '1', leaseB: '1' };
  };
  const sinks = (ds: Diamond[]) =>
    f.sql('SELECT state, waiting_on FROM awa.jobs WHERE id = ANY($1::bigint[]) ORDER BY id', [ds.map((d) => d.sink)]);
  const complete = (client: pg.Client, ids: string[]) =>
    client.query({
      name: workerSql.completeJobs.name,
      text: workerSql.completeJobs.text,
      values: [ids, ids.map(() => '1')],
    });
  const completeWithOutput = (client: pg.Client, ids: string[]) =>
    client.query({
      name: workerSql.completeJobsWithOutput.name,
      text: workerSql.completeJobsWithOutput.text,
      values: [ids, ids.map(() => '1'), ids.map(() => '{"done": true}'), ids.map(() => null)],
    });
  /** A session of its own, with its backend's pid. */
  const session = async () => {
    const client = await f.client();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return { client, pid: rows[0]!.pid };
  };
  /** Resolves once the statement of the session with backend `pid` waits for a lock another transaction holds. */
  const blocked = async (pid: number) => {
    for (;;) {
      const [row] = await f.sql('SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1', [pid]);
      if (row?.wait_event_type === 'Lock') return;
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  /**
   * Completes the diamonds' `a` in an open transaction, then their `b` in another session, which
   * waits for the sinks the first one holds; commits the first, and returns the sinks once both ran.
   */
  const overlapping = async (ds: Diamond[], completeLater: typeof complete) => {
    const first = await f.client();
    const { client: second, pid } = await session();
    await first.query('BEGIN');
    await complete(
      first,
      ds.map((d) => d.a),
    );
    const later = completeLater(
      second,
      ds.map((d) => d.b),
    );
    await blocked(pid);
    await first.query('COMMIT');
    await later;
    return sinks(ds);
  };
  const unblocked = (ds: Diamond[]) => ds.map(() => ({ state: 'available', waiting_on: 0 }));

  it('the later completion waits for the dependent the earlier one holds, then counts from its committed row', async () => {
    const ds = [await diamond(), await diamond()];
    expect(await overlapping(ds, completeWithOutput)).toEqual(unblocked(ds));
  });

  it('the later completion counts from the committed row also beside 20,000 other jobs, with statistics', async () => {
    // The plan production tables get: the dependents to lock come from a union, sorted, then each row
    // by primary key. When a row was changed meanwhile, PostgreSQL re-checks it against the union; a
    // union read in place (not a materialized CTE) dropped every row after the first (chaos saw it).
    await f.sql(
      `INSERT INTO awa.jobs (kind, queue, args, state, max_attempts, priority, run_at)
       SELECT 'filler', 'default', '{}', 'scheduled', 1, 0, now() + interval '1 day' FROM generate_series(1, 20000)`,
    );
    await f.sql('ANALYZE awa.jobs');
    const ds = [await diamond(), await diamond(), await diamond()];
    expect(await overlapping(ds, complete)).toEqual(unblocked(ds));
  });

  it('a completion held on its lease while the other dependency commits counts from the committed row', async () => {
    const d = await diamond();
    const [heartbeat, other] = [await f.client(), await f.client()];
    const { client: held, pid } = await session();
    await heartbeat.query('BEGIN');
    await heartbeat.query('UPDATE awa.active_leases SET heartbeat_at = now() WHERE job_id = $1', [d.b]);
    const later = complete(held, [d.b]);
    await blocked(pid);
    await completeWithOutput(other, [d.a]);
    await heartbeat.query('COMMIT');
    await later;
    expect(await sinks([d])).toEqual([{ state: 'available', waiting_on: 0 }]);
  });
});
