import pg from 'pg';
import { instancesSql } from '../../lib/sql/index.js';
import { adminUrl } from '../support/test-database.js';
import { execOn, statementsOf, useSqlFixture } from './sql-fixture.js';
import { seedRunning } from '../support/job-factory.js';
import { waitFor } from '../support/wait-for.js';

const HOUR = 3_600_000;
const SETTINGS = JSON.stringify({
  heartbeatStaleAfter: 90_000,
  queues: { default: { retryBaseDelay: 1_000, retryMaxDelay: 60_000 } },
});

/** The instance registry and the two liveness probes of the orphan sweep. */
describe('instances.sql', () => {
  const f = useSqlFixture();

  let nextKey = 1_000;
  /** An instance row, with its heartbeat `ageMs` old. */
  async function register(id: string, ageMs = 0): Promise<number> {
    const key = ++nextKey;
    await f.run(instancesSql.upsertInstance, [id, 'host', 4242, ['default'], key, '{}', '{}', null]);
    if (ageMs > 0)
      await f.sql(
        `UPDATE awa.instances SET heartbeat_at = now() - $2::float8 * interval '1 millisecond' WHERE id = $1`,
        [id, ageMs],
      );
    return key;
  }
  /** A session holding `key`'s liveness lock, as a running instance's session does. */
  async function holdLock(key: number): Promise<pg.Client> {
    const client = await f.client();
    const [row] = await f.run(instancesSql.acquireLivenessLock, [key], client);
    expect(row).toEqual({ acquired: true });
    return client;
  }
  const dead = async (self: string, staleMs: number, sessionProbe: boolean) =>
    (await f.run(instancesSql.findDeadInstances, [self, staleMs, sessionProbe])).map((r) => r.id).sort();

  describe('acquireLivenessLock', () => {
    it('grants a key to one session at a time, and frees it when that session ends', async () => {
      const a = await f.client();
      const b = await f.client();
      expect(await f.run(instancesSql.acquireLivenessLock, [77], a)).toEqual([{ acquired: true }]);
      expect(await f.run(instancesSql.acquireLivenessLock, [77], b)).toEqual([{ acquired: false }]);
      expect(await f.run(instancesSql.acquireLivenessLock, [78], b)).toEqual([{ acquired: true }]);
      await a.end();
      const c = await f.client();
      await waitFor(
        async () => (await f.run(instancesSql.acquireLivenessLock, [77], c))[0]!.acquired === true,
        15_000,
        "the ended session's lock to be freed",
      );
    });
  });

  describe('upsertInstance', () => {
    it('registers an instance with started_at = heartbeat_at = now()', async () => {
      const tx = await f.client();
      await tx.query('BEGIN');
      await f.run(
        instancesSql.upsertInstance,
        ['i-1', 'box', 123, ['default', 'reports'], 99, SETTINGS, '{"report.render":"reports"}', ['report.nightly']],
        tx,
      );
      const rows = await execOn(tx)(
        `SELECT id, hostname, pid, queues, lock_key, settings, handlers, schedules, started_at = now() AS ` +
          `started_now, heartbeat_at = now() AS beat_now FROM awa.instances`,
      );
      await tx.query('COMMIT');
      expect(rows).toEqual([
        {
          id: 'i-1',
          hostname: 'box',
          pid: 123,
          queues: ['default', 'reports'],
          lock_key: 99,
          settings: JSON.parse(SETTINGS),
          handlers: { 'report.render': 'reports' },
          schedules: ['report.nightly'],
          started_now: true,
          beat_now: true,
        },
      ]);
    });

    it(
      'refreshes heartbeat_at, queues, lock_key, settings, handlers and schedules ' +
        'of a known instance and keeps its started_at',
      async () => {
        await f.run(instancesSql.upsertInstance, [
          'i-1',
          'box',
          123,
          ['default'],
          99,
          SETTINGS,
          '{"a":"default"}',
          ['old.schedule'],
        ]);
        await f.sql(
          `UPDATE awa.instances SET started_at = now() - interval '1 hour', heartbeat_at = now() - interval '1 hour'`,
        );
        await f.run(instancesSql.upsertInstance, [
          'i-1',
          'other-box',
          456,
          ['reports'],
          100,
          '{"heartbeatStaleAfter":5000}',
          '{"b":"reports"}',
          ['new.schedule'],
        ]);
        const rows = await f.sql(
          `SELECT id, hostname, pid, queues, lock_key, settings, handlers, schedules,
                started_at < now() - interval '59 minutes' AS
          kept_start,
                heartbeat_at > now() - interval '1 minute' AS refreshed FROM awa.instances`,
        );
        expect(rows).toEqual([
          {
            id: 'i-1',
            hostname: 'box',
            pid: 123,
            queues: ['reports'],
            lock_key: 100,
            settings: { heartbeatStaleAfter: 5_000 },
            handlers: { b: 'reports' },
            schedules: ['new.schedule'],
            kept_start: true,
            refreshed: true,
          },
        ]);
      },
    );
  });

  describe('deleteInstance', () => {
    it('deletes only the given instance', async () => {
      await register('i-1');
      await register('i-2');
      expect(await f.execute(instancesSql.deleteInstance, ['i-1'])).toBe(1);
      expect(await f.execute(instancesSql.deleteInstance, ['i-1'])).toBe(0);
      expect(await f.sql('SELECT id FROM awa.instances')).toEqual([{ id: 'i-2' }]);
    });
  });

  describe('findDeadInstances', () => {
    it('with the session probe: a held liveness lock and a fresh row count as live', async () => {
      const liveKey = await register('live');
      await holdLock(liveKey);
      await register('no-lock');
      await holdLock(await register('stale', HOUR));
      expect(await dead('self', 60_000, true)).toEqual(['no-lock', 'stale']);
    });

    it('with the heartbeat probe: only the row age counts', async () => {
      await register('no-lock');
      await holdLock(await register('stale', HOUR));
      await register('slightly-old', 30_000);
      expect(await dead('self', 60_000, false)).toEqual(['stale']);
      expect(await dead('self', 10_000, false)).toEqual(['slightly-old', 'stale']);
    });

    it("judges a row's age by the heartbeatStaleAfter in its own settings, by $2 only without one", async () => {
      await register('patient', 30 * 60_000);
      await f.sql(`UPDATE awa.instances SET settings = '{"heartbeatStaleAfter": 3600000}' WHERE id = 'patient'`);
      await register('hasty', 20_000);
      await f.sql(`UPDATE awa.instances SET settings = '{"heartbeatStaleAfter": 10000}' WHERE id = 'hasty'`);
      await register('plain', 30 * 60_000);
      expect(await dead('self', 60_000, false)).toEqual(['hasty', 'plain']);
    });

    it('reports an instance whose session closed', async () => {
      const session = await holdLock(await register('mortal'));
      expect(await dead('self', 60_000, true)).toEqual([]);
      await session.end();
      await waitFor(
        async () => (await dead('self', 60_000, true)).includes('mortal'),
        15_000,
        'the closed session to count as dead',
      );
    });

    it('does not count a lock on the same key held in another database', async () => {
      const key = await register('elsewhere');
      const other = new pg.Client({ connectionString: adminUrl() });
      await other.connect();
      try {
        const [row] = (await other.query({ text: instancesSql.acquireLivenessLock.text, values: [key] })).rows;
        expect(row).toEqual({ acquired: true });
        expect(await dead('self', 60_000, true)).toEqual(['elsewhere']);
      } finally {
        await other.end();
      }
    });

    it('says which instances are stale, as opposed to only missing their lock', async () => {
      await register('no-lock');
      await register('stale', HOUR);
      const rows = await f.run(instancesSql.findDeadInstances, ['self', 60_000, true]);
      expect(rows.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
        { id: 'no-lock', stale: false },
        { id: 'stale', stale: true },
      ]);
    });

    it('never reports the caller itself', async () => {
      await register('me', HOUR);
      await register('you', HOUR);
      expect(await dead('me', 60_000, true)).toEqual(['you']);
      expect(await dead('me', 60_000, false)).toEqual(['you']);
    });
  });

  describe('probeSession', () => {
    it('answers on a working session', async () => {
      expect(await f.run(instancesSql.probeSession, [], await f.client())).toEqual([{ alive: 1 }]);
    });
  });

  describe('terminateStaleSession', () => {
    it('ends the given backend only if it still carries the given application_name, and frees its locks', async () => {
      const old = new pg.Client({ connectionString: f.url, application_name: 'awa:me' });
      old.on('error', () => undefined);
      await old.connect();
      const pid = (old as unknown as { processID: number }).processID;
      await f.run(instancesSql.acquireLivenessLock, [4242], old);
      const fresh = await f.client();
      expect(await f.run(instancesSql.terminateStaleSession, [pid, 'awa:someone-else'], fresh)).toEqual([]);
      expect(await f.run(instancesSql.terminateStaleSession, [pid, 'awa:me'], fresh)).toEqual([{ terminated: true }]);
      await waitFor(
        async () => (await f.run(instancesSql.acquireLivenessLock, [4242], fresh))[0]!.acquired === true,
        15_000,
        'the old lock to be freed',
      );
      await old.end().catch(() => undefined);
    });

    it('never ends the calling session itself', async () => {
      const me = await f.client();
      const [{ pid }] = await execOn(me)('SELECT pg_backend_pid() AS pid');
      const [{ name }] = await execOn(me)(`SELECT current_setting('application_name') AS name`);
      expect(await f.run(instancesSql.terminateStaleSession, [pid, name], me)).toEqual([]);
    });
  });

  describe('forgetDeadInstances', () => {
    it('deletes the given instances once none of their leases is left', async () => {
      await register('gone');
      await register('busy');
      await register('bystander');
      await seedRunning(f.sql, { instanceId: 'busy' });
      expect(await f.execute(instancesSql.forgetDeadInstances, [['gone', 'busy', 'unknown']])).toBe(1);
      expect((await f.sql('SELECT id FROM awa.instances ORDER BY id')).map((r) => r.id)).toEqual(['busy', 'bystander']);
      await f.sql('DELETE FROM awa.active_leases');
      expect(await f.execute(instancesSql.forgetDeadInstances, [['busy']])).toBe(1);
      expect(await f.sql('SELECT id FROM awa.instances')).toEqual([{ id: 'bystander' }]);
    });
  });

  it('ran every statement of instances.sql', () => {
    expect(
      statementsOf(instancesSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
