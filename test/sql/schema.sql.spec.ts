import { AwaMigrations } from 'nestjs-awa';
import pg from 'pg';
import { MAINTENANCE_LOCK_KEY } from '../../lib/awa.constants.js';
import { schemaSql } from '../../lib/sql/index.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';
import { waitFor } from '../support/wait-for.js';

/** The boot-time schema checks and the maintenance leader lock. */
describe('schema.sql', () => {
  const f = useSqlFixture({ reset: false });
  let empty: TestDatabase;
  let emptyClient: pg.Client;
  beforeAll(async () => {
    empty = await createTestDatabase();
    emptyClient = new pg.Client({ connectionString: empty.url });
    await emptyClient.connect();
  });
  afterAll(async () => {
    await emptyClient?.end();
    await empty?.drop();
  });

  describe('schemaExists', () => {
    it('is true once the migrations ran, false on an empty database', async () => {
      expect(await f.run(schemaSql.schemaExists)).toEqual([{ present: true }]);
      expect(await f.run(schemaSql.schemaExists, [], emptyClient)).toEqual([{ present: false }]);
    });
  });

  describe('appliedMigrations', () => {
    it('lists every bundled migration once they ran', async () => {
      const [{ names }] = await f.run<{ names: string[] }>(schemaSql.appliedMigrations);
      expect([...names].sort()).toEqual(AwaMigrations.map((M) => new M().name).sort());
    });

    it('is empty while the migrations table is', async () => {
      await emptyClient.query('BEGIN');
      try {
        await emptyClient.query('CREATE SCHEMA awa');
        await emptyClient.query('CREATE TABLE awa.schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
        expect(await f.run(schemaSql.appliedMigrations, [], emptyClient)).toEqual([{ names: [] }]);
      } finally {
        await emptyClient.query('ROLLBACK');
      }
    });

    it('needs the schema: without it the statement fails, so callers check schemaExists first', async () => {
      // The statement's comment says "empty if the schema is missing"; it is not (see the report).
      await expect(emptyClient.query({ text: schemaSql.appliedMigrations.text })).rejects.toThrow(/awa\.schema_migrations" does not exist/);
    });
  });

  describe('tryMaintenanceLock / releaseMaintenanceLock', () => {
    it('grants the lock to one session at a time; released or ended, it is free for the next', async () => {
      const a = await f.client();
      const b = await f.client();
      expect(await f.run(schemaSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ acquired: true }]);
      expect(await f.run(schemaSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], b)).toEqual([{ acquired: false }]);
      expect(await f.run(schemaSql.releaseMaintenanceLock, [MAINTENANCE_LOCK_KEY], b)).toEqual([{ released: false }]);
      expect(await f.run(schemaSql.releaseMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ released: true }]);
      expect(await f.run(schemaSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], b)).toEqual([{ acquired: true }]);
      expect(await f.run(schemaSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ acquired: false }]);
      // A leader that dies without releasing: PostgreSQL frees the lock with its session.
      await b.end();
      await waitFor(async () => (await f.run(schemaSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY], a))[0].acquired === true, 15_000,
        'the dead leader\'s lock to be freed');
      expect(await f.run(schemaSql.releaseMaintenanceLock, [MAINTENANCE_LOCK_KEY], a)).toEqual([{ released: true }]);
    });
  });

  describe('listen', () => {
    it('subscribes the session to a channel, as a named statement', async () => {
      const client = await f.client();
      const statement = schemaSql.listen('awa_jobs');
      expect(statement.name).toBe('awa_listen_awa_jobs');
      const payloads: string[] = [];
      client.on('notification', (msg) => payloads.push(`${msg.channel}:${msg.payload}`));
      await f.run(statement, [], client);
      await f.sql(`SELECT pg_notify('awa_jobs', 'hello')`);
      await waitFor(async () => payloads.length > 0, 15_000, 'the notification');
      expect(payloads).toEqual(['awa_jobs:hello']);
    });

    it('quotes the channel name', () => {
      expect(schemaSql.listen('we"ird').text).toBe('LISTEN "we""ird"');
    });
  });

  describe('terminateBackend', () => {
    it('ends the given backend, rolling back its open transaction and freeing its locks', async () => {
      const victim = await f.client();
      const pid = (victim as unknown as { processID: number }).processID;
      await victim.query('BEGIN');
      await victim.query(`SELECT pg_advisory_xact_lock(4242)`);
      expect(await f.run(schemaSql.terminateBackend, [pid])).toEqual([{ terminated: true }]);
      await waitFor(async () => (await f.sql('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).length === 0, 15_000, 'the backend to end');
      expect(await f.sql('SELECT pg_try_advisory_lock(4242) AS free, pg_advisory_unlock(4242)')).toEqual([{ free: true, pg_advisory_unlock: true }]);
    });
  });

  describe('setLocalStatementTimeout', () => {
    it('sets statement_timeout until the transaction ends, and stops a statement that outlives it', async () => {
      const client = await f.client();
      await client.query('BEGIN');
      expect(await f.run(schemaSql.setLocalStatementTimeout, ['250'], client)).toEqual([{ statement_timeout: '250ms' }]);
      await expect(client.query('SELECT pg_sleep(30)')).rejects.toThrow(/canceling statement due to statement timeout/);
      await client.query('ROLLBACK');
      expect((await client.query('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '0' }]);
    });
  });

  it('ran every statement of schema.sql', () => {
    expect(statementsOf(schemaSql).map((s) => s.name).filter((n) => !f.executed.has(n))).toEqual([]);
  });
});
