import { DataSource } from 'typeorm';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { DedicatedConnection } from '../../lib/database/dedicated-connection.js';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import { sessionSql } from '../../lib/sql/index.js';
import { statement } from '../../lib/sql/sql-statement.js';
import { dedicatedBackends } from '../support/dedicated-connections.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';

const APPLICATION_NAME = 'awa-test-dedicated';
const sleepThenAnswer = statement<[seconds: number], { answer: number }>(
  'test_dedicated_sleep',
  `SELECT 42 AS answer FROM pg_sleep($1::float8)`,
);

/**
 * DedicatedConnection, under the claim, lease and handoff connections: a statement goes on it only
 * once it is connected and idle (else the caller uses the pool), and close() lets a statement
 * running on it end before the connection does (the producer closes its own at shutdown, when an
 * enqueue may still be on it).
 */
describe('DedicatedConnection', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let awa: AwaDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = new DataSource({ type: 'postgres', url: db.url, logging: false });
    await dataSource.initialize();
    awa = new AwaDatabase(dataSource, resolveAwaOptions({}));
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  const backends = () => dedicatedBackends(db.url, APPLICATION_NAME);
  const open = () =>
    new DedicatedConnection(awa, resolveAwaOptions({}), {
      applicationName: APPLICATION_NAME,
      session: sessionSql.setLeaseSession,
    });
  /** Calls query() until it runs on the connection (the first call starts the connect). */
  async function connected(connection: DedicatedConnection): Promise<void> {
    await waitFor(async () => (await connection.query(sleepThenAnswer, [0])) !== undefined, 15_000, 'the connection');
  }

  it('is used only when connected and idle, and ends when closed', async () => {
    const connection = open();
    expect(connection.query(sleepThenAnswer, [0])).toBeUndefined();
    await connected(connection);
    const running = connection.query(sleepThenAnswer, [0.2]);
    // Busy: the caller goes to the pool.
    expect(connection.query(sleepThenAnswer, [0])).toBeUndefined();
    expect(await running).toEqual([{ answer: 42 }]);
    connection.close();
    await waitFor(async () => (await backends()).length === 0, 15_000, 'the connection to end');
    expect(connection.query(sleepThenAnswer, [0])).toBeUndefined();
  });

  it('closed while a statement runs on it, answers that statement, then ends', async () => {
    const connection = open();
    await connected(connection);
    const running = connection.query(sleepThenAnswer, [0.3]);
    connection.close();
    expect(await running).toEqual([{ answer: 42 }]);
    await waitFor(async () => (await backends()).length === 0, 15_000, 'the connection to end');
    expect(connection.query(sleepThenAnswer, [0])).toBeUndefined();
  });
});
