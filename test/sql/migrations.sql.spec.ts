import { AwaMigrations } from 'nestjs-awa';
import pg from 'pg';
import { migrationsSql } from '../../lib/sql/index.js';
import { createTestDatabase } from '../support/test-database.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';

/** The boot-time schema checks. */
describe('migrations.sql', () => {
  const f = useSqlFixture({ reset: false });
  let empty: Awaited<ReturnType<typeof createTestDatabase>>;
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
      expect(await f.run(migrationsSql.schemaExists)).toEqual([{ present: true }]);
      expect(await f.run(migrationsSql.schemaExists, [], emptyClient)).toEqual([{ present: false }]);
    });
  });

  describe('appliedMigrations', () => {
    it('lists every bundled migration once they ran', async () => {
      const [{ names }] = (await f.run(migrationsSql.appliedMigrations)) as [{ names: string[] }];
      expect([...names].sort()).toEqual(AwaMigrations.map((M) => new M().name).sort());
    });

    it('is empty while the migrations table is', async () => {
      await emptyClient.query('BEGIN');
      try {
        await emptyClient.query('CREATE SCHEMA awa');
        await emptyClient.query(
          'CREATE TABLE awa.schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
        );
        expect(await f.run(migrationsSql.appliedMigrations, [], emptyClient)).toEqual([{ names: [] }]);
      } finally {
        await emptyClient.query('ROLLBACK');
      }
    });

    it('needs the schema: without it the statement fails, so callers check schemaExists first', async () => {
      await expect(emptyClient.query({ text: migrationsSql.appliedMigrations.text })).rejects.toThrow(
        /awa\.schema_migrations" does not exist/,
      );
    });
  });

  it('ran every statement of migrations.sql', () => {
    expect(
      statementsOf(migrationsSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
