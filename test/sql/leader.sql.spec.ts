import type pg from 'pg';
import { MAINTENANCE_LOCK_KEY } from '../../lib/awa.constants.js';
import { leaderSql } from '../../lib/sql/index.js';
import { execOn, statementsOf, useSqlFixture } from './sql-fixture.js';
import { waitFor } from '../support/wait-for.js';

const LEASE = 'maintenance';
const MINUTE = 60_000;

/**
 * Maintenance leadership: a session advisory lock (direct connections), or a row lease with a term
 * (connectionMode 'transaction-pooler').
 */
describe('leader.sql', () => {
  const f = useSqlFixture();
  beforeEach(async () => {
    await f.sql('TRUNCATE awa.leader');
  });

  const claim = async (holder: string, term: string | null, ms = MINUTE, on?: pg.ClientBase) =>
    (await f.run(leaderSql.claimLeadership, [LEASE, holder, term, ms], on))[0]?.term;
  const fence = async (client: pg.ClientBase, holder: string, term: string) =>
    (await f.run(leaderSql.fenceLeadership, [LEASE, holder, term], client))[0]?.term;
  const expire = () => f.sql(`UPDATE awa.leader SET expires_at = now() - interval '1 second'`);

  describe('tryMaintenanceLock / releaseMaintenanceLock', () => {
    it('grants the lock to one session at a time; released or ended, it is free for the next', async () => {
      const a = await f.client();
      const b = await f.client();
      expect(await f.run(leaderSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ acquired: true }]);
      expect(await f.run(leaderSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], b)).toEqual([{ acquired: false }]);
      expect(await f.run(leaderSql.releaseMaintenanceLock, [MAINTENANCE_LOCK_KEY], b)).toEqual([{ released: false }]);
      expect(await f.run(leaderSql.releaseMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ released: true }]);
      expect(await f.run(leaderSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], b)).toEqual([{ acquired: true }]);
      expect(await f.run(leaderSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ acquired: false }]);
      // A leader that dies without releasing: PostgreSQL frees the lock with its session.
      await b.end();
      await waitFor(
        async () => (await f.run(leaderSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], a))[0]!.acquired,
        15_000,
        "the dead leader's lock to be freed",
      );
      expect(await f.run(leaderSql.releaseMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ released: true }]);
    });
  });

  describe('claimLeadership', () => {
    it('gives a free lease term 1; its holder renews the same term; another instance gets nothing', async () => {
      expect(await claim('a', null)).toBe('1');
      expect(await claim('a', '1')).toBe('1');
      expect(await claim('b', null)).toBeUndefined();
      expect(await f.sql('SELECT holder, term::int FROM awa.leader')).toEqual([{ holder: 'a', term: 1 }]);
    });

    it('hands an expired lease to the next claimant with the next term', async () => {
      expect(await claim('a', null)).toBe('1');
      await expire();
      expect(await claim('b', null)).toBe('2');
      expect(await claim('a', '1')).toBeUndefined();
    });

    it('starts a new term when the holder renews an expired lease, or one whose term it lost track of', async () => {
      expect(await claim('a', null)).toBe('1');
      await expire();
      expect(await claim('a', '1')).toBe('2');
      // The claim committed but its answer was lost: the holder asks again without a term.
      expect(await claim('a', null)).toBe('3');
    });

    it("leaves a lease live in another's hands alone, without waiting for that leader's fence", async () => {
      const leader = await f.client();
      const rival = await f.client();
      expect(await claim('a', null)).toBe('1');
      await leader.query('BEGIN');
      expect(await fence(leader, 'a', '1')).toBe('1');
      // Waiting for the fenced transaction would fail the claim here rather than hang the test.
      await rival.query(`SET lock_timeout = '200ms'`);
      expect(await claim('b', null, MINUTE, rival)).toBeUndefined();
      await leader.query('COMMIT');
    });

    it('lets exactly one of many simultaneous claimants of an expired lease win', async () => {
      expect(await claim('old', null)).toBe('1');
      await expire();
      const clients = await Promise.all(Array.from({ length: 6 }, () => f.client()));
      const terms = await Promise.all(clients.map((c, i) => claim(`c${i}`, null, MINUTE, c)));
      expect(terms.filter((t) => t !== undefined)).toEqual(['2']);
    });
  });

  describe('fenceLeadership', () => {
    it('holds only for the current holder and term of an unexpired lease', async () => {
      const client = await f.client();
      expect(await claim('a', null)).toBe('1');
      expect(await fence(client, 'a', '1')).toBe('1');
      expect(await fence(client, 'b', '1')).toBeUndefined();
      await expire();
      expect(await fence(client, 'a', '1')).toBeUndefined();
      expect(await claim('b', null)).toBe('2');
      expect(await fence(client, 'a', '1')).toBeUndefined();
      expect(await fence(client, 'b', '2')).toBe('2');
    });

    it(
      'makes a takeover wait until the fenced transaction commits, ' + 'which the deposed term then cannot fence again',
      async () => {
        const leader = await f.client();
        const rival = await f.client();
        expect(await claim('a', null)).toBe('1');
        await leader.query('BEGIN');
        expect(await fence(leader, 'a', '1')).toBe('1');
        await execOn(leader)(
          `INSERT INTO awa.instances (id, hostname, pid, lock_key) VALUES ('written-by-a', 'h', 1, 1)`,
        );

        // Expiring the lease, or taking it over, must wait for the fence.
        const rivalPid = (await rival.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
        const takeover = (async () => {
          await rival.query(`UPDATE awa.leader SET expires_at = now() - interval '1 second'`);
          return claim('b', null, MINUTE, rival);
        })();
        await waitFor(
          async () =>
            (await f.sql(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [rivalPid]))
              .length === 1,
          15_000,
          'the takeover to wait',
        );
        await leader.query('COMMIT');
        expect(await takeover).toBe('2');
        // The fenced write committed before the takeover; the old term fences nothing any more.
        expect(await f.sql(`SELECT id FROM awa.instances`)).toEqual([{ id: 'written-by-a' }]);
        expect(await fence(leader, 'a', '1')).toBeUndefined();
      },
    );
  });

  describe('resignLeadership', () => {
    it("frees the lease at once for the next claimant, and only the holder's current term can", async () => {
      expect(await claim('a', null)).toBe('1');
      expect(await f.execute(leaderSql.resignLeadership, [LEASE, 'b', '1'])).toBe(0);
      expect(await f.execute(leaderSql.resignLeadership, [LEASE, 'a', '7'])).toBe(0);
      expect(await claim('b', null)).toBeUndefined();
      expect(await f.execute(leaderSql.resignLeadership, [LEASE, 'a', '1'])).toBe(1);
      expect(await claim('b', null)).toBe('2');
    });
  });

  it('ran every statement of leader.sql', () => {
    expect(
      statementsOf(leaderSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
