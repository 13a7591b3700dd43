import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { foldedTransaction, inline } from '../../lib/database/folded-transaction.js';
import { statement } from '../../lib/sql/sql-statement.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const opening = statement<[id: string], { txid: string }>(
  'test_folded_open',
  `INSERT INTO folded_rows (id, note) VALUES ($1::int, 'opening') RETURNING txid_current()::text AS txid`,
);
const closing = statement<[id: string, note: string | null], { note: string }>(
  'test_folded_close',
  "INSERT INTO folded_rows (id, note) VALUES ($1::int, coalesce($2, 1 / 0 || '')) RETURNING note",
);

/**
 * foldedTransaction on this repo's TypeORM (1.x): the opening goes with the START TRANSACTION, the
 * closing with the COMMIT, all in one transaction with the body's writes.
 */
describe('a folded transaction', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  /** The texts the DataSource's pg clients were sent, in order. */
  const sent: string[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await new DataSource({ type: 'postgres', url: db.url }).initialize();
    await dataSource.query('CREATE TABLE folded_rows (id int PRIMARY KEY, note text NOT NULL)');
    const pool = (dataSource.driver as unknown as { master: import('pg').Pool }).master;
    pool.on('acquire', (client) => {
      const query = client.query as (...args: unknown[]) => unknown;
      if ((client as unknown as { spied?: boolean }).spied) return;
      (client as unknown as { spied: boolean }).spied = true;
      client.query = ((...args: unknown[]) => {
        sent.push(typeof args[0] === 'string' ? args[0] : String((args[0] as { text: string }).text));
        return query.apply(client, args);
      }) as typeof client.query;
    });
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });
  beforeEach(() => (sent.length = 0));

  const notes = async () =>
    (await dataSource.query('SELECT id, note FROM folded_rows ORDER BY id')) as Array<{ id: number; note: string }>;

  it('sends the opening with START TRANSACTION and the closing with COMMIT: three round trips around one write', async () => {
    const result = await foldedTransaction(dataSource, inline(opening, ['1']), async (manager, opened) => {
      expect(opened).toEqual([{ txid: expect.any(String) }]);
      const [inside] = (await manager.query('SELECT txid_current()::text AS txid')) as Array<{ txid: string }>;
      expect(inside!.txid).toBe(opened![0]!.txid);
      await manager.query(`INSERT INTO folded_rows (id, note) VALUES (2, 'body')`);
      return { value: 'done', closing: inline(closing, ['3', "it's closed"]) };
    });
    expect(result).toEqual({ value: 'done', closed: [{ note: "it's closed" }] });
    expect(sent).toHaveLength(4);
    expect(sent[0]).toMatch(/^START TRANSACTION;\s+INSERT INTO folded_rows/);
    expect(sent[3]).toMatch(/RETURNING note;\s+COMMIT$/);
    expect(await notes()).toEqual([
      { id: 1, note: 'opening' },
      { id: 2, note: 'body' },
      { id: 3, note: "it's closed" },
    ]);
  });

  it('rolls everything back when the closing fails: the COMMIT after it never runs', async () => {
    await dataSource.query('TRUNCATE folded_rows');
    const error = await caught(() =>
      foldedTransaction(dataSource, inline(opening, ['1']), async (manager) => {
        await manager.query(`INSERT INTO folded_rows (id, note) VALUES (2, 'body')`);
        return { value: undefined, closing: inline(closing, ['3', null]) };
      }),
    );
    expect(error).toMatchObject({ message: 'division by zero' });
    expect(sent.at(-1)).toBe('ROLLBACK');
    expect(await notes()).toEqual([]);
  });

  it('rolls everything back when the body throws', async () => {
    const error = await caught(() =>
      foldedTransaction(dataSource, inline(opening, ['1']), async () => {
        throw new Error('body failed');
      }),
    );
    expect(error).toMatchObject({ message: 'body failed' });
    expect(await notes()).toEqual([]);
  });
});
