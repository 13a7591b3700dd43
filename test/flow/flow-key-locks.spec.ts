import type pg from 'pg';
import { compileFilter } from '../../lib/admin/job-filter.js';
import { FIRST_CURSOR } from '../../lib/sql/admin.sql.js';
import { adminBatchSql, flowSql, jobsSql, maintenanceSql, workerSql } from '../../lib/sql/index.js';
import { waitForLockWait } from '../support/lock-waits.js';
import { createStatementGate } from '../support/statement-gate.js';
import { waitFor } from '../support/wait-for.js';
import { useSqlFixture, type SqlFixture } from '../sql/sql-fixture.js';
import { resetFlow, seedKeyed } from './flow-fixture.js';

const GATE = 7316;

/** Attempts ready to be completed: up to `count` keyed jobs of kind k claimed, one per key. */
async function claimRunning(f: SqlFixture, keyLimit: number, count: number) {
  const rows = await f.run(flowSql.claimFlowJobs, ['q', ['k'], count, 'instance-a', 0, 0, 0, keyLimit, 0]);
  const claimed = rows.filter((r) => r.id !== null) as Array<{ id: string; run_lease: string }>;
  expect(claimed).toHaveLength(count);
  return { ids: claimed.map((r) => r.id), leases: claimed.map((r) => r.run_lease) };
}

/** A path that makes keyed jobs of keys b and a available, in that row order, in one statement. */
interface AvailablePath {
  name: string;
  /** Seeds the jobs the path makes available and returns the statement that does it, run on a client. */
  seed(f: SqlFixture): Promise<(on: pg.ClientBase) => Promise<unknown>>;
}

const PATHS: AvailablePath[] = [
  {
    name: 'the promotion sweep',
    async seed(f) {
      // run_at order (the sweep's) and insertion order: b first.
      await f.sql(`INSERT INTO awa.jobs (kind, queue, concurrency_key, state, run_at)
                   VALUES ('p', 'q', 'b', 'scheduled', now() - interval '2 minutes'),
                          ('p', 'q', 'a', 'scheduled', now() - interval '1 minute')`);
      return (on) => f.run(maintenanceSql.promoteDueJobs, [100], on);
    },
  },
  {
    name: 'a bulk retry (retryJobs)',
    async seed(f) {
      // The batch goes by id, newest first: b first.
      await f.sql(`INSERT INTO awa.jobs (kind, queue, concurrency_key, state, finalized_at)
                   VALUES ('r', 'q', 'a', 'failed', now()), ('r', 'q', 'b', 'failed', now())`);
      const filter = compileFilter({ kinds: ['r'] });
      return (on) => f.run(adminBatchSql.retryBatch(filter), [FIRST_CURSOR, 100, ...filter.values], on);
    },
  },
  {
    name: 'a release (releaseJobs)',
    async seed(f) {
      await seedKeyed(f.sql, 'b');
      await seedKeyed(f.sql, 'a');
      const { ids, leases } = await claimRunning(f, 2, 2);
      // The released attempts in the order b, a.
      const keys = await f.sql(
        `SELECT id::text, concurrency_key AS key FROM awa.all_jobs WHERE id = ANY ($1::bigint[])`,
        [ids],
      );
      const keyOf = (id: string) => keys.find((k) => k.id === id)!.key as string;
      const order = [0, 1].sort((x, y) => -keyOf(ids[x]!).localeCompare(keyOf(ids[y]!)));
      return (on) =>
        f.run(
          workerSql.releaseJobs,
          [order.map((i) => ids[i]!), order.map((i) => leases[i]!), 'released', [false, false], [0, 0], [0, 0]],
          on,
        );
    },
  },
  {
    name: 'a debounce replace (resolveUniqueJobs)',
    async seed(f) {
      await f.sql(`INSERT INTO awa.jobs (kind, queue, concurrency_key, state, run_at, unique_key, unique_states)
                   VALUES ('u', 'q', 'b', 'scheduled', now() + interval '1 hour', 'u1', '{scheduled,available}'),
                          ('u', 'q', 'a', 'scheduled', now() + interval '1 hour', 'u2', '{scheduled,available}')`);
      // The replacements go by unique key: b's first.
      const input = JSON.stringify([
        { ord: 0, unique_key: 'u1', replace: true, args: {}, run_at: null },
        { ord: 1, unique_key: 'u2', replace: true, args: {}, run_at: null },
      ]);
      return (on) => f.run(jobsSql.resolveUniqueJobs, [input], on);
    },
  },
];

/**
 * Every path that locks key rows of awa.flow_keys takes them in (queue, key) order, as completions
 * (the lease-deletion trigger) do. Forced interleaving: the path has locked what it locks for key b's
 * row and waits at a gate before key a's row; a completion of attempts of keys a and b starts and
 * waits for a lock; then the gate opens. Row by row, the path would now wait for key a, which the
 * completion holds while it waits for key b: a deadlock, and one of them fails.
 */
describe('flow key locks', () => {
  const f = useSqlFixture();
  beforeEach(() => resetFlow(f.sql));

  it.each(PATHS)('$name and a completion over the same keys both succeed, never deadlocked', async (path) => {
    const run = await path.seed(f);
    await seedKeyed(f.sql, 'a');
    await seedKeyed(f.sql, 'b');
    const running = await claimRunning(f, 2, 2);
    const pathClient = await f.client();
    const completer = await f.client();
    const [{ pid }] = (await completer.query('SELECT pg_backend_pid() AS pid')).rows;
    // Nested loops: the statement's rows in its driving order (b first), as the issue saw them.
    await pathClient.query('SET enable_hashjoin = off; SET enable_mergejoin = off');
    const gate = await createStatementGate(
      f.url,
      GATE,
      'UPDATE',
      'awa.jobs',
      'AFTER',
      `NEW.concurrency_key = 'a' AND NEW.state = 'available' AND OLD.state <> 'available'`,
    );
    try {
      await gate.close();
      const pathDone = run(pathClient).then(
        () => null,
        (error: unknown) => error,
      );
      await waitFor(async () => (await gate.waiting()) === 1, 10_000, 'the path at the gate');
      // completeJobs returns the attempts it missed: the rest it completed.
      const completed = f.run(workerSql.completeJobs, [running.ids, running.leases], completer).then(
        (missed) => running.ids.length - missed.length,
        (error: unknown) => error,
      );
      await waitForLockWait(f.sql, { pid }, 'the completion waiting for a key lock');
      await gate.open();
      expect(await pathDone).toBeNull();
      expect(await completed).toBe(2);
    } finally {
      await gate.remove();
    }
    const keys = await f.sql(`SELECT key, running, has_waiting FROM awa.flow_keys ORDER BY key`);
    expect(keys).toEqual([
      { key: 'a', running: 0, has_waiting: true },
      { key: 'b', running: 0, has_waiting: true },
    ]);
  });
});
