import pg from 'pg';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { statement } from '../../lib/sql/sql-statement.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** How AwaDatabase sends values: arrays of integer keys as one array text, every other value as pg does. */
describe('AwaDatabase values', () => {
  let db: TestDatabase;
  let client: pg.Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  const echo = statement<
    [keys: string[], texts: string[], empty: string[], numbers: number[]],
    Record<string, unknown>
  >(
    'test_echo_arrays',
    `SELECT $1::bigint[]::text AS keys, $2::text[] AS texts, cardinality($3::bigint[]) AS empty, $4::float8[] AS numbers`,
  );

  it('sends integer keys as array text and leaves other arrays to pg, with the same values either way', async () => {
    const keys = ['1', '-2', '9007199254740993', '1764912345678901'];
    const texts = ['12', 'a,b', '"quoted"', 'back\\slash', 'NULL', '{braces}', ''];
    const [row] = await AwaDatabase.queryOn(client, echo, [keys, texts, [], [1.5, 2]]);
    expect(row).toEqual({
      keys: '{1,-2,9007199254740993,1764912345678901}',
      texts,
      empty: 0,
      numbers: [1.5, 2],
    });
  });

  it('refuses a key array with anything but digits as pg would (a text that is not an integer)', async () => {
    await expect(AwaDatabase.queryOn(client, echo, [['1', '2x'], [], [], []])).rejects.toThrow(
      /invalid input syntax for type bigint: "2x"/,
    );
  });
});
