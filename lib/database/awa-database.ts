import { Inject, Injectable } from '@nestjs/common';
import type { Client, Pool, PoolClient, QueryConfig, QueryResult, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';
import { AWA_OPTIONS } from '../awa.constants.js';
import { StatementTimeoutError } from '../errors/statement-timeout.error.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { sessionSql } from '../sql/index.js';
import type { SqlStatement, SqlValues } from '../sql/sql-statement.js';
import { SqlState, sqlStateOf } from './sql-state.js';
import { pgPoolOf } from './typeorm-adapter.js';
import { AsyncScope } from '../util/async-scope.js';

/** How long a dedicated connection may take to connect when the DataSource sets no limit. */
export const DEDICATED_CONNECT_TIMEOUT_MS = 10_000;

/** The message of pg's client-side query_timeout error. */
const PG_QUERY_TIMEOUT = 'Query read timeout';

/** Injection token of the TypeORM DataSource the queue lives in. */
export const AWA_DATA_SOURCE = Symbol('AWA_DATA_SOURCE');
/** Injection token of the AwaDatabase of read-only statements: the read replica's (readDataSource), else the primary's. */
export const AWA_READ_DATABASE = Symbol('AWA_READ_DATABASE');

/**
 * Pool clients checked out in 'transaction-pooler' mode: statements on them go unnamed too
 * (queryOn is static, and its callers hold only the client).
 */
const UNNAMED_CLIENTS = new WeakSet<object>();

/** Limits of one transaction beyond statementTimeout, in ms (see sessionSql.setLocalLimits). */
export interface TransactionLimits {
  /** lock_timeout: a wait for a row lock longer than this fails the statement. */
  lockTimeout?: number;
  /** idle_in_transaction_session_timeout: PostgreSQL ends the session if the client stays silent this long mid-transaction. */
  idleTimeout?: number;
}

/** The client of a fenced leader transaction, while that transaction is open. */
interface Scope {
  client: PoolClient;
  open: boolean;
}

/**
 * The error to throw for a statement `name` that failed on a session or in a transaction carrying
 * statement_timeout (`timeoutMs`, 0: none): the server's cancel as a StatementTimeoutError naming
 * it, anything else as it is.
 */
export function serverTimeoutOr(error: unknown, name: string, timeoutMs: number): unknown {
  if (timeoutMs === 0 || sqlStateOf(error) !== SqlState.queryCanceled) return error;
  return new StatementTimeoutError(name, timeoutMs, { cause: error });
}

function config(sql: SqlStatement, values: unknown[], named: boolean): QueryConfig {
  const sent = values.map(keyArrayText);
  const query: QueryConfig = named
    ? { name: sql.name, text: sql.text, values: sent }
    : { text: sql.text, values: sent };
  if (sql.row) (query as QueryConfig & { rowMode: 'array' }).rowMode = 'array';
  return query;
}

/** A statement's rows, each made by its row factory when it has one (read as arrays then, see config). */
function rowsOf<R>(sql: SqlStatement<unknown[], R>, result: QueryResult<QueryResultRow>, values: unknown[]): R[] {
  const rows = result.rows as unknown[];
  if (sql.row) for (let i = 0; i < rows.length; i++) rows[i] = sql.row(rows[i] as unknown[], values);
  return rows as R[];
}

/**
 * An array of integer keys (job ids, run leases, as digit strings) as PostgreSQL's array text, in
 * one join; anything else as it is. pg would quote and escape each element with two regular
 * expressions, about 0.2 µs per job of a completion's two arrays, for the same text.
 */
function keyArrayText(value: unknown): unknown {
  if (!Array.isArray(value) || value.length === 0) return value;
  // An indexed loop: for-of made an iterator result per element here (heap sampling of a drain).
  for (let i = 0; i < value.length; i++) {
    const element: unknown = value[i];
    if (typeof element !== 'string' || !INTEGER_KEY.test(element)) return value;
  }
  return `{${value.join(',')}}`;
}
const INTEGER_KEY = /^-?\d+$/;

/**
 * The queue's door to PostgreSQL. Hot-path statements go straight to the pg Pool behind the
 * app's TypeORM DataSource, as named prepared statements: no entity hydration, no query builder.
 * Behind a transaction-mode pooler (connectionMode 'transaction-pooler') they go unnamed: a
 * prepared statement lives on one server connection, and the pooler hands out another at the next
 * transaction (PgBouncer before 1.21 does not track them).
 */
@Injectable()
export class AwaDatabase {
  /** Named prepared statements (direct mode), else unnamed ones. */
  readonly named: boolean;
  /** Pooler mode: the client of a fenced leader transaction that query()/execute() run on (see bound). */
  private readonly scope = new AsyncScope<Scope>();
  /** Direct mode: whether query()/execute() send each statement in a transaction of its own (see inOwnTransactions). */
  private readonly ownTransactions = new AsyncScope<{ open: boolean }>();
  private readonly guarded = new WeakSet<PoolClient>();

  constructor(
    @Inject(AWA_DATA_SOURCE) readonly dataSource: DataSource,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {
    this.named = options.connectionMode !== 'transaction-pooler';
    // A database restart can raise a client's 'error' in the instant between its checkout and the
    // moment TypeORM's QueryRunner listens, which would crash the process. Keep one listener on
    // every client; pg-pool still discards the broken client when it is released.
    this.pool.on('connect', (client) => client.on('error', () => undefined));
  }

  /** The pg Pool of the DataSource (its primary, when replication is configured). */
  get pool(): Pool {
    return pgPoolOf(this.dataSource);
  }

  /** Runs a statement and returns its rows. */
  async query<P extends unknown[], R>(sql: SqlStatement<P, R>, ...[values]: SqlValues<NoInfer<P>>): Promise<R[]> {
    return rowsOf(sql, await this.run(sql, values ?? []), values ?? []);
  }

  /** Runs a statement and returns how many rows it touched. */
  async execute<P extends unknown[]>(
    sql: SqlStatement<P, unknown>,
    ...[values]: SqlValues<NoInfer<P>>
  ): Promise<number> {
    return (await this.run(sql, values ?? [])).rowCount ?? 0;
  }

  /**
   * Runs `body` with query(), execute() and transaction() sent on `client` (in pooler mode), so that
   * work written against the pool, like a maintenance task, runs inside the caller's transaction on
   * that client and never waits for a second one. Only while `body` runs: a continuation it left
   * behind (an event listener's query) goes to the pool once the scope is over.
   */
  async bound<T>(client: PoolClient, body: () => Promise<T>): Promise<T> {
    if (this.named) return body();
    const scope: Scope = { client, open: true };
    try {
      return await this.scope.run(scope, body);
    } finally {
      scope.open = false;
    }
  }

  /**
   * Runs `body` with each statement it sends through query() and execute() in a transaction of its
   * own, which carries statementTimeout on the server and JIT off (setLocalStatementTimeout): the
   * leader's maintenance in direct mode. Its statements read large tables, and a lull's statistics
   * can price them past jit_above_cost; on the app's pooled sessions a stale-heartbeat rescue was
   * compiled for 3 s at a time in a soak. Three more round trips per statement, a few per tick. Only
   * while `body` runs (as bound).
   */
  async inOwnTransactions<T>(body: () => Promise<T>): Promise<T> {
    const scope = { open: true };
    try {
      return await this.ownTransactions.run(scope, body);
    } finally {
      scope.open = false;
    }
  }

  /** The client of the fenced transaction this call runs in, if any. */
  private scoped(): PoolClient | undefined {
    const scope = this.scope.store;
    return scope?.open ? scope.client : undefined;
  }

  /**
   * One statement on a pool client, bounded by statementTimeout. The pool is the app's, so the
   * limit cannot be a session setting, and a statement outside a transaction cannot carry one of
   * its own: pg's client-side query_timeout bounds the wait instead. That alone would leave the
   * statement running on the server, to commit once its lock frees; so the client is discarded and
   * its backend terminated before the error is thrown.
   */
  private async run(sql: SqlStatement, values: unknown[]): Promise<QueryResult<QueryResultRow>> {
    const query = config(sql, values, this.named);
    // Inside a fenced leader transaction (pooler mode): SET LOCAL bounds it there.
    const scoped = this.scoped();
    if (scoped) return scoped.query(query);
    const timeout = this.options.statementTimeout;
    if (this.ownTransactions.store?.open) return this.transaction((client) => this.runLocal(client, sql, query));
    if (timeout === 0) return this.pool.query(query);
    const client = await this.checkout();
    try {
      const result = await client.query({ ...query, query_timeout: timeout } as QueryConfig);
      client.release();
      return result;
    } catch (error) {
      // As pool.query does: a client whose statement failed is not reused.
      client.release(error instanceof Error ? error : true);
      if (!(error instanceof Error) || error.message !== PG_QUERY_TIMEOUT) throw error;
      // Behind a pooler the backend key is the pooler's, not a server pid: dropping the client
      // connection is all we can do there (the pooler then closes its server connection).
      const pid = (client as unknown as { processID?: number }).processID;
      if (pid !== undefined && this.named) {
        await this.pool
          .query({
            name: sessionSql.terminateBackend.name,
            text: sessionSql.terminateBackend.text,
            values: [pid],
            query_timeout: timeout,
          } as QueryConfig)
          .catch(() => undefined);
      }
      throw new StatementTimeoutError(sql.name, timeout, { cause: error });
    }
  }

  /** A statement inside an open transaction, whose SET LOCAL statement_timeout the server enforces. */
  private async runLocal(
    client: PoolClient,
    sql: SqlStatement,
    query: QueryConfig,
  ): Promise<QueryResult<QueryResultRow>> {
    try {
      return await client.query(query);
    } catch (error) {
      throw serverTimeoutOr(error, sql.name, this.options.statementTimeout);
    }
  }

  /**
   * Runs `body` in one transaction on one pool client: committed if it resolves, rolled back if it
   * throws. statementTimeout applies to each of its statements, on the server (SET LOCAL), and so do
   * `limits`. Inside a fenced leader transaction (see bound) it is a savepoint of that transaction,
   * on its client: the leader never waits for a second connection while it holds the fence.
   */
  async transaction<T>(body: (client: PoolClient) => Promise<T>, limits?: TransactionLimits): Promise<T> {
    const scoped = this.scoped();
    if (scoped) return AwaDatabase.savepoint(scoped, body);
    const client = await this.checkout();
    if (!this.named) UNNAMED_CLIENTS.add(client);
    let broken = false;
    try {
      await client.query('BEGIN');
      await this.setLimits(client, limits);
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  private async setLimits(client: PoolClient, limits: TransactionLimits | undefined): Promise<void> {
    const statementTimeout = this.options.statementTimeout > 0 ? String(this.options.statementTimeout) : null;
    if (limits === undefined && statementTimeout !== null) {
      await AwaDatabase.queryOn(client, sessionSql.setLocalStatementTimeout, [statementTimeout]);
      return;
    }
    // Also with no limit to set (statementTimeout 0): the limits stay as the role has them, JIT goes off.
    const ms = (value: number | undefined) => (value === undefined ? null : String(value));
    await AwaDatabase.queryOn(client, sessionSql.setLocalLimits, [
      statementTimeout,
      ms(limits?.lockTimeout),
      ms(limits?.idleTimeout),
    ]);
  }

  /** `body` on `client`, inside its open transaction, as a savepoint: rolled back alone if it throws. */
  private static async savepoint<T>(client: PoolClient, body: (client: PoolClient) => Promise<T>): Promise<T> {
    await client.query('SAVEPOINT awa_nested');
    try {
      const result = await body(client);
      await client.query('RELEASE SAVEPOINT awa_nested');
      return result;
    } catch (error) {
      await client.query('ROLLBACK TO SAVEPOINT awa_nested').catch(() => undefined);
      throw error;
    }
  }

  /**
   * A pool client with an 'error' listener. The 'connect' hook above misses the clients the pool
   * opened before this service existed (TypeORM's first connection). pool.query releases a client
   * inside the query's callback; an awaited query releases it a microtask later, and if the server's
   * "terminating connection" arrives in the same read as the result, pg raises 'error' on the client
   * in between, when pg-pool's idle listener is not attached (the chaos run's restart hit this).
   */
  private async checkout(): Promise<PoolClient> {
    const client = await this.pool.connect();
    if (!this.guarded.has(client)) {
      client.on('error', () => undefined);
      this.guarded.add(client);
    }
    return client;
  }

  /** Runs a statement on a given client (a dedicated connection or a checked-out pool client). */
  static async queryOn<P extends unknown[], R>(
    client: Client | PoolClient,
    sql: SqlStatement<P, R>,
    ...[values]: SqlValues<NoInfer<P>>
  ): Promise<R[]> {
    return rowsOf(sql, await client.query(config(sql, values ?? [], !UNNAMED_CLIENTS.has(client))), values ?? []);
  }

  /**
   * A new connection outside the pool, with the pool's own settings, for a session-scoped job:
   * LISTEN, the maintenance leader lock, the instance liveness lock; behind a transaction pooler,
   * the health probe. The caller connects and ends it.
   */
  createDedicatedClient(applicationName: string, connectTimeoutMs?: number, pipeline = false): Client {
    const pool = this.pool as Pool & { Client: new (config: object) => Client; options: Record<string, unknown> };
    const client = new pool.Client({
      ...pool.options,
      application_name: applicationName,
      // TCP keepalive: a half-open connection (a NAT or load balancer that dropped it) fails in time.
      keepAlive: true,
      // pg without pipeline mode ignores the option (the client then has no `pipeline` true).
      ...(pipeline ? { pipeline: true } : {}),
      connectionTimeoutMillis:
        connectTimeoutMs ??
        ((pool.options.connectionTimeoutMillis as number | undefined) || DEDICATED_CONNECT_TIMEOUT_MS),
    });
    // Behind a transaction pooler, a prepared statement would land on one server connection only.
    if (!this.named) UNNAMED_CLIENTS.add(client);
    // A dropped connection must not crash the process; owners watch 'end' and reconnect.
    client.on('error', () => undefined);
    return client;
  }
}
