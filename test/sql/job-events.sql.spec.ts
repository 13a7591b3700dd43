import { compileFilter } from '../../lib/admin/job-filter.js';
import { RescueErrors } from '../../lib/awa.messages.js';
import {
  adminBatchSql,
  adminSql,
  flowSql,
  jobEventsSql,
  jobsSql,
  maintenanceSql,
  workerSql,
} from '../../lib/sql/index.js';
import { FIRST_CURSOR } from '../../lib/sql/admin.sql.js';
import type { RescueParams } from '../../lib/sql/maintenance.sql.js';
import { seedJob, seedRunning } from '../support/job-factory.js';
import { planNodes, explainedPlan, readsOf } from '../support/query-plan.js';
import { waitFor } from '../support/wait-for.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';

const ALL_EVENTS = ['completed', 'failed', 'cancelled', 'retrying', 'rescued', 'snoozed', 'deleted', 'released'];
const rescueParams = (): RescueParams => [[], [], [], 60_000, 60_000, 500];

/** Every transition writes its durable events in its own statement; the group statements read them. */
describe('job-events.sql', () => {
  const f = useSqlFixture();

  beforeEach(async () => {
    await f.sql('TRUNCATE awa.job_events, awa.event_subscriptions, awa.event_group_positions RESTART IDENTITY');
  });

  /** Group `group` subscribes to `events` of kinds `kind` (glob) in queue `queue` ('*': any). */
  const subscribe = (group = 'g', events = ALL_EVENTS, kind = '*', queue = '*') =>
    f.run(jobEventsSql.storeSubscriptions, [
      group,
      events,
      events.map(() => kind),
      events.map(() => kind.replace(/\*/g, '%')),
      events.map(() => queue),
    ]);
  /**
   * `read`'s rows once it returns at least `n`: an event is read once settled, i.e. once every writing
   * transaction older than it ended, in any database of the server (other test files' too).
   */
  const settled = <T>(read: () => Promise<T[]>, n: number) =>
    waitFor(async () => {
      const rows = await read();
      return rows.length >= n ? rows : undefined;
    });
  /** The stored events, oldest first, as "job:event:state". */
  const stored = async () =>
    (await f.sql(`SELECT job_id::text || ':' || event || ':' || state AS e FROM awa.job_events ORDER BY tx, id`)).map(
      (r) => r.e as string,
    );

  describe('written by each transition', () => {
    beforeEach(() => subscribe());

    it.each([
      ['completeJobs', workerSql.completeJobs],
      ['completeJobsOutsideWorkflows (no workflow step)', workerSql.completeJobsOutsideWorkflows],
    ] as const)('a completion batch (%s) writes completed', async (_, completeJobs) => {
      const a = await seedRunning(f.sql);
      const b = await seedRunning(f.sql);
      await f.run(completeJobs, [
        [a.id, b.id],
        [a.runLease, b.runLease],
      ]);
      expect((await stored()).sort()).toEqual([`${a.id}:completed:completed`, `${b.id}:completed:completed`].sort());
    });

    it('a completion with output writes completed', async () => {
      const a = await seedRunning(f.sql);
      await f.run(workerSql.completeJobsWithOutput, [[a.id], [a.runLease], ['{"x":1}'], [null]]);
      expect(await stored()).toEqual([`${a.id}:completed:completed`]);
    });

    it('a failure with attempts left writes retrying, with the error', async () => {
      const a = await seedRunning(f.sql, { maxAttempts: 3 });
      await f.run(workerSql.failJobs, [[a.id], [a.runLease], ['boom'], [1000], [1000]]);
      expect(await stored()).toEqual([`${a.id}:retrying:retryable`]);
      const [row] = await f.sql('SELECT attempt, payload FROM awa.job_events');
      expect(row).toEqual({ attempt: 1, payload: { error: 'boom' } });
    });

    it('a failure of the last attempt writes failed', async () => {
      const a = await seedRunning(f.sql, { maxAttempts: 1 });
      await f.run(workerSql.failJobs, [[a.id], [a.runLease], ['boom'], [1000], [1000]]);
      expect(await stored()).toEqual([`${a.id}:failed:failed`]);
    });

    it('a cancel of a running attempt writes cancelled', async () => {
      const a = await seedRunning(f.sql);
      await f.run(workerSql.cancelRunningJobs, [[a.id], [a.runLease], 'cancelled']);
      expect(await stored()).toEqual([`${a.id}:cancelled:cancelled`]);
    });

    it('a cancel of one waiting job writes cancelled', async () => {
      const id = await seedJob(f.sql, { state: 'scheduled', runAtMs: 60_000 });
      await f.run(jobsSql.cancelWaitingJob, [id, 'cancelled']);
      expect(await stored()).toEqual([`${id}:cancelled:cancelled`]);
    });

    it('a bulk cancel writes cancelled for each waiting job it cancels', async () => {
      const a = await seedJob(f.sql);
      const b = await seedJob(f.sql, { state: 'retryable', runAtMs: 60_000 });
      const all = compileFilter({});
      await f.run(adminBatchSql.cancelBatch(all), [FIRST_CURSOR, 10, 'cancelled', ...all.values]);
      expect((await stored()).sort()).toEqual([`${a}:cancelled:cancelled`, `${b}:cancelled:cancelled`].sort());
    });

    it('a delete of one job writes deleted, from either table', async () => {
      const waiting = await seedJob(f.sql);
      const done = await seedRunning(f.sql);
      await f.run(workerSql.completeJobs, [[done.id], [done.runLease]]);
      await f.sql('DELETE FROM awa.job_events');
      await f.run(adminSql.deleteJob, [waiting]);
      await f.run(adminSql.deleteJob, [done.id]);
      expect(await stored()).toEqual([`${waiting}:deleted:available`, `${done.id}:deleted:completed`]);
    });

    it('a bulk delete writes deleted for each job it deletes, and nothing for a running one', async () => {
      const a = await seedJob(f.sql);
      const b = await seedJob(f.sql, { state: 'scheduled', runAtMs: 60_000 });
      await seedRunning(f.sql);
      const all = compileFilter({});
      await f.run(adminBatchSql.deleteBatch(all), [FIRST_CURSOR, 10, ...all.values]);
      expect((await stored()).sort()).toEqual([`${a}:deleted:available`, `${b}:deleted:scheduled`].sort());
    });

    it('a rescue by stale heartbeat writes rescued, then the state it moved the job to', async () => {
      const a = await seedRunning(f.sql, { heartbeatAgeMs: 3_600_000, maxAttempts: 5 });
      const last = await seedRunning(f.sql, { heartbeatAgeMs: 3_600_000, maxAttempts: 1 });
      await f.run(maintenanceSql.rescueStaleHeartbeats, [...rescueParams(), 60_000, 'stale']);
      expect((await stored()).sort()).toEqual(
        [
          `${a.id}:rescued:retryable`,
          `${a.id}:retrying:retryable`,
          `${last.id}:rescued:failed`,
          `${last.id}:failed:failed`,
        ].sort(),
      );
    });

    it('a rescue of a dead instance writes rescued', async () => {
      const a = await seedRunning(f.sql, { instanceId: 'dead' });
      await f.run(maintenanceSql.rescueOrphanedLeases, [...rescueParams(), ['dead'], RescueErrors.instanceDiedPrefix]);
      expect(await stored()).toEqual([`${a.id}:rescued:retryable`, `${a.id}:retrying:retryable`]);
    });

    it('a rescue past the deadline writes rescued', async () => {
      const a = await seedRunning(f.sql, { deadlineInMs: -1_000 });
      await f.run(maintenanceSql.rescueExpiredDeadlines, [...rescueParams(), 'deadline']);
      expect(await stored()).toEqual([`${a.id}:rescued:retryable`, `${a.id}:retrying:retryable`]);
    });

    it('a release on shutdown writes released', async () => {
      const a = await seedRunning(f.sql);
      await f.run(workerSql.releaseJobs, [[a.id], [a.runLease], 'shutdown', [true], [1000], [1000]]);
      expect(await stored()).toEqual([`${a.id}:released:available`]);
    });

    it('a snooze writes snoozed', async () => {
      const a = await seedRunning(f.sql);
      await f.run(workerSql.snoozeJobs, [[a.id], [a.runLease], [60_000], [10], ['too many']]);
      expect(await stored()).toEqual([`${a.id}:snoozed:scheduled`]);
    });

    it('a rate limit writes released', async () => {
      const a = await seedRunning(f.sql);
      await f.run(flowSql.rateLimitJob, [a.id, a.runLease, 1000, false, false]);
      expect(await stored()).toEqual([`${a.id}:released:scheduled`]);
    });

    it('a fenced-out write writes nothing', async () => {
      const a = await seedRunning(f.sql);
      await f.run(workerSql.completeJobs, [[a.id], [String(Number(a.runLease) + 1)]]);
      expect(await stored()).toEqual([]);
    });
  });

  describe('subscriptions', () => {
    it('nothing is written when no group subscribes', async () => {
      const a = await seedRunning(f.sql);
      const b = await seedRunning(f.sql, { maxAttempts: 1 });
      await f.run(workerSql.completeJobs, [[a.id], [a.runLease]]);
      await f.run(workerSql.failJobs, [[b.id], [b.runLease], ['boom'], [1000], [1000]]);
      expect(await stored()).toEqual([]);
    });

    it('with no subscription the event insert reads no job row (a one-time filter stops it)', async () => {
      const a = await seedRunning(f.sql);
      const client = await f.client();
      await client.query('BEGIN');
      try {
        await client.query(`PREPARE done(bigint[], bigint[]) AS ${workerSql.completeJobs.text}`);
        const { rows } = await client.query(
          `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE done('{${a.id}}', '{${a.runLease}}')`,
        );
        const plan = explainedPlan(rows);
        // Every event insert of the statement (the changed rows', and the workflow steps a dependency ended)
        // stops at the filter: none reads the rows it would write events of.
        const inserts = planNodes(plan).filter((n) => n['Relation Name'] === 'job_events');
        const scans = inserts.flatMap((insert) => planNodes(insert)).filter((n) => n['CTE Name'] !== undefined);
        const changedRows = scans.filter((n) => ['stayed', 'moved'].includes(String(n['CTE Name'])));
        expect(changedRows).toHaveLength(2);
        expect(inserts.length).toBeGreaterThanOrEqual(2);
        expect(scans.every((n) => (n['Actual Loops'] ?? 0) === 0)).toBe(true);
      } finally {
        await client.query('ROLLBACK');
      }
    });

    it('writes only the events, kinds and queues some group subscribes to, once for several groups', async () => {
      await subscribe('billing', ['completed'], 'order.*', 'orders');
      await subscribe('audit', ['completed'], 'order.placed', '*');
      const hit = await seedRunning(f.sql, { kind: 'order.placed', queue: 'orders' });
      const otherKind = await seedRunning(f.sql, { kind: 'email.sent', queue: 'orders' });
      const otherQueue = await seedRunning(f.sql, { kind: 'order.paid', queue: 'other' });
      const failed = await seedRunning(f.sql, { kind: 'order.placed', queue: 'orders', maxAttempts: 1 });
      await f.run(workerSql.completeJobs, [
        [hit.id, otherKind.id, otherQueue.id],
        [hit.runLease, otherKind.runLease, otherQueue.runLease],
      ]);
      await f.run(workerSql.failJobs, [[failed.id], [failed.runLease], ['boom'], [1000], [1000]]);
      expect(await stored()).toEqual([`${hit.id}:completed:completed`]);
    });

    it('storeSubscriptions replaces a group’s subscriptions and keeps its position', async () => {
      await subscribe('g', ['completed', 'failed']);
      const [before] = await f.sql('SELECT position_tx::text FROM awa.event_group_positions');
      await subscribe('g', ['failed']);
      expect(await f.sql('SELECT event FROM awa.event_subscriptions')).toEqual([{ event: 'failed' }]);
      expect(await f.sql('SELECT position_tx::text FROM awa.event_group_positions')).toEqual([before]);
    });
  });

  describe('a group', () => {
    const complete = async (kind = 'k') => {
      const a = await seedRunning(f.sql, { kind });
      await f.run(workerSql.completeJobs, [[a.id], [a.runLease]]);
      return a.id;
    };
    const claim = (holder: string, leaseMs = 60_000) => f.run(jobEventsSql.claimGroup, ['g', holder, leaseMs]);

    it('is claimed by one holder at a time, taken over once its lease ran out, and released', async () => {
      await subscribe('g', ['completed']);
      expect(await claim('a')).toHaveLength(1);
      expect(await claim('b')).toEqual([]);
      expect(await claim('a')).toHaveLength(1);
      await f.run(jobEventsSql.releaseGroup, ['g', 'a']);
      expect(await claim('b', -1)).toHaveLength(1);
      expect(await claim('a')).toHaveLength(1);
      expect(await f.run(jobEventsSql.ackGroup, ['g', 'b', '1', '1', 1000])).toEqual([]);
    });

    it('is renewed by its holder only: never once a replay cleared it or another holder took it over', async () => {
      await subscribe('g', ['completed']);
      const renew = (holder: string) => f.run(jobEventsSql.renewGroup, ['g', holder, 60_000]);
      const lease = async () =>
        (
          await f.sql(
            `SELECT holder, lease_until > now() + interval '30 seconds' AS long FROM awa.event_group_positions`,
          )
        )[0];
      expect(await renew('a')).toEqual([]); // nobody holds it: a renewal does not claim it
      expect(await claim('a', 1_000)).toHaveLength(1);
      expect(await renew('a')).toEqual([{ renewed: true }]);
      expect(await lease()).toEqual({ holder: 'a', long: true });
      expect(await renew('b')).toEqual([]);
      await f.run(jobEventsSql.replayGroup, ['g', new Date(0)]);
      expect(await renew('a')).toEqual([]);
      expect(await lease()).toMatchObject({ holder: null });
      expect(await claim('b', -1)).toHaveLength(1);
      expect(await renew('a')).toEqual([]);
      expect(await lease()).toEqual({ holder: 'b', long: false });
    });

    it('reads settled events after its position, marks its own, and moves on by acknowledgement', async () => {
      await subscribe('g', ['completed'], 'mine');
      await subscribe('other', ['completed'], 'theirs');
      const [pos] = await claim('a');
      const mine = await complete('mine');
      const theirs = await complete('theirs');
      const rows = await settled(
        () => f.run(jobEventsSql.readGroupEvents, ['g', pos!.position_tx, pos!.position_id, 10]),
        2,
      );
      expect(rows.map((r) => [r.job_id, r.matched])).toEqual([
        [mine, true],
        [theirs, false],
      ]);
      const last = rows[1]!;
      expect(await f.run(jobEventsSql.ackGroup, ['g', 'a', last.tx, last.id, 60_000])).toEqual([{ acked: true }]);
      const [after] = await claim('a');
      expect(await f.run(jobEventsSql.readGroupEvents, ['g', after!.position_tx, after!.position_id, 10])).toEqual([]);
    });

    it('does not read past an event whose transaction is still open', async () => {
      await subscribe('g', ['completed']);
      const [pos] = await claim('a');
      const open = await f.client();
      const slow = await seedRunning(f.sql);
      await open.query('BEGIN');
      await open.query({ text: workerSql.completeJobs.text, values: [[slow.id], [slow.runLease]] });
      const fast = await complete();
      const read = () => f.run(jobEventsSql.readGroupEvents, ['g', pos!.position_tx, pos!.position_id, 10]);
      expect(await read()).toEqual([]);
      await open.query('COMMIT');
      expect((await settled(read, 2)).map((r) => r.job_id)).toEqual([slow.id, fast]);
    });

    it('counts failures, and is replayed from a time', async () => {
      await subscribe('g', ['completed']);
      await claim('a');
      const first = await complete();
      await f.sql(`UPDATE awa.job_events SET at = now() - interval '1 hour'`);
      const second = await complete();
      const [latest] = await f.sql('SELECT tx::text, id::text FROM awa.job_events ORDER BY tx DESC, id DESC LIMIT 1');
      await f.run(jobEventsSql.ackGroup, ['g', 'a', latest.tx, latest.id, 60_000]);
      expect(await f.run(jobEventsSql.recordGroupFailure, ['g', 'a', 'boom'])).toEqual([{ failures: 1 }]);

      const [replayed] = await f.run(jobEventsSql.replayGroup, ['g', new Date(Date.now() - 60_000)]);
      expect(replayed!.first_at).toBeInstanceOf(Date);
      const [pos] = await claim('b');
      expect(pos!.failures).toBe(0);
      const rows = await settled(
        () => f.run(jobEventsSql.readGroupEvents, ['g', pos!.position_tx, pos!.position_id, 10]),
        1,
      );
      expect(rows.map((r) => r.job_id)).toEqual([second]);

      await f.run(jobEventsSql.replayGroup, ['g', new Date(Date.now() - 7_200_000)]);
      const [again] = await claim('b');
      const all = await settled(
        () => f.run(jobEventsSql.readGroupEvents, ['g', again!.position_tx, again!.position_id, 10]),
        2,
      );
      expect(all.map((r) => r.job_id)).toEqual([first, second]);
    });

    it('is moved past its next subscribed event by a skip, failures cleared', async () => {
      await subscribe('g', ['completed'], 'mine');
      await subscribe('other', ['completed'], 'theirs');
      await claim('a');
      await complete('theirs');
      const stuck = await complete('mine');
      const after = await complete('mine');
      await f.run(jobEventsSql.recordGroupFailure, ['g', 'a', 'boom']);
      const [skipped] = await settled(() => f.run(jobEventsSql.skipGroupEvent, ['g']), 1);
      const [stuckEvent] = await f.sql('SELECT id::text FROM awa.job_events WHERE job_id = $1', [stuck]);
      expect(skipped).toEqual({ skipped_id: stuckEvent.id });
      const [pos] = await claim('b');
      expect(pos!.failures).toBe(0);
      // settled: an event is readable once no older transaction is open (other test files' too).
      const rows = await settled(
        () => f.run(jobEventsSql.readGroupEvents, ['g', pos!.position_tx, pos!.position_id, 10]),
        1,
      );
      expect(rows.map((r) => r.job_id)).toEqual([after]);
      expect(await f.run(jobEventsSql.skipGroupEvent, ['nobody'])).toEqual([]);
    });

    it('is found stored by name, once it has a position', async () => {
      expect(await f.run(jobEventsSql.groupStored, ['g'])).toEqual([]);
      await subscribe('g', ['completed']);
      expect(await f.run(jobEventsSql.groupStored, ['g'])).toEqual([{ stored: true }]);
    });

    it('reports its lag in events and time', async () => {
      await subscribe('g', ['completed']);
      await complete();
      await complete();
      await f.sql(`UPDATE awa.job_events SET at = now() - interval '10 seconds'`);
      const [lag] = await f.run(jobEventsSql.groupLag, [1000]);
      expect(lag).toMatchObject({ group: 'g', lag_events: 2, failures: 0 });
      expect(lag!.lag_ms).toBeGreaterThanOrEqual(10_000);
    });

    it('retention deletes old events every group has passed, and keeps the others', async () => {
      await subscribe('g', ['completed']);
      const [pos] = await claim('a');
      await complete();
      await complete();
      await f.sql(`UPDATE awa.job_events SET at = now() - interval '1 hour'`);
      const [firstEvent] = await f.sql('SELECT tx::text, id::text FROM awa.job_events ORDER BY tx, id LIMIT 1');
      expect(await f.execute(jobEventsSql.deleteExpiredEvents, [60_000, 100])).toBe(0);
      await f.run(jobEventsSql.ackGroup, ['g', 'a', firstEvent.tx, firstEvent.id, 60_000]);
      expect(await f.execute(jobEventsSql.deleteExpiredEvents, [7_200_000, 100])).toBe(0);
      expect(await f.execute(jobEventsSql.deleteExpiredEvents, [60_000, 100])).toBe(1);
      expect(pos).toBeDefined();
      await f.run(jobEventsSql.dropGroup, ['g']);
      expect(await f.execute(jobEventsSql.deleteExpiredEvents, [60_000, 100])).toBe(1);
      expect(await f.sql('SELECT * FROM awa.event_subscriptions')).toEqual([]);
    });
  });

  describe('plans', () => {
    /** The scans of awa.job_events in the plan of `statement` run with `values` (prepared, generic plan). */
    const scansOf = async (text: string, types: string, values: string) => {
      const client = await f.client();
      await client.query('BEGIN');
      try {
        await client.query('SET LOCAL plan_cache_mode = force_generic_plan');
        await client.query(`PREPARE s(${types}) AS ${text}`);
        const { rows } = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE s(${values})`);
        const plan = explainedPlan(rows);
        return readsOf(plan, 'job_events').map(
          (n) => `${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`,
        );
      } finally {
        await client.query('ROLLBACK');
      }
    };

    beforeEach(async () => {
      await f.sql(`INSERT INTO awa.job_events (job_id, event, kind, queue, state, attempt)
                   SELECT i, 'completed', 'k', 'default', 'completed', 1 FROM generate_series(1, 20000) i`);
      await f.sql('ANALYZE awa.job_events');
    });

    it('a group reads on from its position through the primary key', async () => {
      expect(
        await scansOf(jobEventsSql.readGroupEvents.text, 'text, xid8, bigint, int', `'g', '1', 19990, 100`),
      ).toEqual(['Index Scan using job_events_pkey']);
    });

    it('retention deletes the oldest events first, through the index on at', async () => {
      const scans = await scansOf(jobEventsSql.deleteExpiredEvents.text, 'float8, int', `60000, 1000`);
      expect(scans).toContain('Index Scan using job_events_at_idx');
      expect(scans.filter((s) => s.startsWith('Seq Scan'))).toEqual([]);
    });
  });

  it('every statement of job-events.sql.ts ran in this file', () => {
    expect(
      statementsOf(jobEventsSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
