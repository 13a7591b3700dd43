import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOfManager, pgPoolOf, queryRowsWithManager } from '../../lib/database/typeorm-adapter.js';
import { statement } from '../../lib/sql/sql-statement.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/**
 * The TypeORM adapter on this repo's TypeORM (1.x). The same calls on TypeORM 0.3 run in the
 * CommonJS consumer app of test/pack (enqueue in the app's own transaction).
 */
describe('the TypeORM adapter', () => {
  let db: TestDatabase;
  let dataSource: DataSource;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await new DataSource({ type: 'postgres', url: db.url }).initialize();
    await dataSource.query('CREATE TABLE adapter_rows (id int PRIMARY KEY, n int NOT NULL)');
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('finds the pg pool behind the DataSource', async () => {
    const { rows } = await pgPoolOf(dataSource).query('SELECT current_database() AS name');
    expect(rows).toEqual([{ name: db.name }]);
  });

  it('finds the DataSource of a transaction manager and of the default manager', async () => {
    expect(dataSourceOfManager(dataSource.manager)).toBe(dataSource);
    await dataSource.transaction(async (manager) => expect(dataSourceOfManager(manager)).toBe(dataSource));
  });

  it(
    'returns the rows of INSERT, UPDATE and DELETE ... RETURNING alike ' +
      '(TypeORM wraps the last two in [rows, count])',
    async () => {
      const insert = statement<[], { id: number }>(
        'test_adapter_insert',
        'INSERT INTO adapter_rows (id, n) SELECT i, i FROM generate_series(1, 3) i RETURNING id',
      );
      const update = statement<[minId: number], { id: number; n: number }>(
        'test_adapter_update',
        'UPDATE adapter_rows SET n = n + 10 WHERE id >= $1 RETURNING id, n',
      );
      const remove = statement<[id: number], { id: number }>(
        'test_adapter_delete',
        'DELETE FROM adapter_rows WHERE id = $1 RETURNING id',
      );
      await dataSource.transaction(async (manager) => {
        expect(await queryRowsWithManager(manager, insert, [])).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
        const updated = await queryRowsWithManager(manager, update, [2]);
        expect(updated.sort((a, b) => a.id - b.id)).toEqual([
          { id: 2, n: 12 },
          { id: 3, n: 13 },
        ]);
        expect(await queryRowsWithManager(manager, remove, [1])).toEqual([{ id: 1 }]);
      });
      expect(await dataSource.query('SELECT id, n FROM adapter_rows ORDER BY id')).toEqual([
        { id: 2, n: 12 },
        { id: 3, n: 13 },
      ]);
    },
  );
});
