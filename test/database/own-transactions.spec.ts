import { DataSource } from 'typeorm';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { StatementTimeoutError } from '../../lib/errors/statement-timeout.error.js';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import { statement } from '../../lib/sql/sql-statement.js';
import { asyncStoreSlots } from '../support/async-store-slots.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

const settings = statement<[], { jit: string; statement_timeout: string }>(
  'test_own_transaction_settings',
  `SELECT current_setting('jit') AS jit, current_setting('statement_timeout') AS statement_timeout`,
);
const sleep = statement<[seconds: number]>('test_own_transaction_sleep', `SELECT pg_sleep($1::float8)`);

/**
 * AwaDatabase.inOwnTransactions, the direct-mode leader's fence: each statement its maintenance
 * sends through query() runs in a transaction of its own, with statementTimeout on the server and
 * JIT off; outside it (and after it), statements go to the pool as they are.
 */
describe('AwaDatabase.inOwnTransactions', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let awa: AwaDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = new DataSource({ type: 'postgres', url: db.url, logging: false });
    await dataSource.initialize();
    // The role's sessions compile with JIT where the server can: the queue's own transactions must not.
    await dataSource.query(`ALTER DATABASE "${db.name}" SET jit = on`);
    await dataSource.destroy();
    await dataSource.initialize();
    awa = new AwaDatabase(dataSource, resolveAwaOptions({ statementTimeout: 400 }));
  });
  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  it('runs each statement with JIT off and the statement timeout set for its transaction only', async () => {
    const [inside] = await awa.inOwnTransactions(() => awa.query(settings));
    expect(inside).toMatchObject({ jit: 'off', statement_timeout: '400ms' });
    // The pool's sessions keep their own settings.
    const [outside] = await awa.query(settings);
    expect(outside!.jit).toBe('on');
    expect(outside!.statement_timeout).toBe('0');
  });

  it("leaves no AsyncLocalStorage on once it is over, so the app's promises pay nothing for it", async () => {
    const fresh = new AwaDatabase(dataSource, resolveAwaOptions({ statementTimeout: 400 }));
    const before = await asyncStoreSlots();
    await fresh.inOwnTransactions(() => fresh.query(settings));
    expect(await asyncStoreSlots()).toBe(before);
  });

  it('ends a statement past statementTimeout on the server, as a StatementTimeoutError naming it', async () => {
    const error = await awa.inOwnTransactions(() => awa.query(sleep, [30])).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StatementTimeoutError);
    expect((error as Error).message).toContain('test_own_transaction_sleep');
    // Its transaction was rolled back and its client returned: the next statement runs.
    const [after] = await awa.inOwnTransactions(() => awa.query(settings));
    expect(after!.jit).toBe('off');
  });

  it("turns JIT off also without a statement timeout, leaving the role's own timeout as it is", async () => {
    await dataSource.query(`ALTER DATABASE "${db.name}" SET statement_timeout = '7s'`);
    const fresh = new DataSource({ type: 'postgres', url: db.url, logging: false });
    await fresh.initialize();
    try {
      const untimed = new AwaDatabase(fresh, resolveAwaOptions({ statementTimeout: 0 }));
      const [inside] = await untimed.inOwnTransactions(() => untimed.query(settings));
      expect(inside).toEqual({ jit: 'off', statement_timeout: '7s' });
      const [inTransaction] = await untimed.transaction((client) => AwaDatabase.queryOn(client, settings));
      expect(inTransaction).toEqual({ jit: 'off', statement_timeout: '7s' });
      const [outside] = await untimed.query(settings);
      expect(outside).toEqual({ jit: 'on', statement_timeout: '7s' });
    } finally {
      await fresh.destroy();
      await dataSource.query(`ALTER DATABASE "${db.name}" RESET statement_timeout`);
    }
  });

  it('sends a continuation left behind by the body to the pool as it is, once the body is over', async () => {
    let later: Promise<unknown> | undefined;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    await awa.inOwnTransactions(async () => {
      later = gate.then(() => awa.query(settings));
    });
    release();
    const [row] = (await later) as Array<{ jit: string }>;
    expect(row!.jit).toBe('on');
  });
});
