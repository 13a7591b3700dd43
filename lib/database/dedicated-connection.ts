import type { Client } from 'pg';
import { AwaDatabase, serverTimeoutOr } from './awa-database.js';
import { SqlState, sqlStateOf } from './sql-state.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import type { SqlStatement, SqlValues } from '../sql/sql-statement.js';

/** Ends a client at once, even if its socket is stalled (end() alone waits for the server). */
export function discardClient(client: Client): void {
  client.end().catch(() => undefined);
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** After a failed connect, the statements go through the pool for this long before the next try. */
export const RECONNECT_DELAY_MS = 1_000;

/** What a dedicated connection is for: its name on the server and the settings of its session. */
export interface DedicatedConnectionSettings {
  /** Its application_name in pg_stat_activity. */
  readonly applicationName: string;
  /** Run once after connecting, with statementTimeout (ms as text, '0': none): the session's settings. */
  readonly session: SqlStatement<[statementTimeout: string], unknown>;
  /**
   * Opened in pg's pipeline mode (each statement sent at once, with its own Sync, without waiting for
   * the answers before it), where the app's pg has it (8.23 and newer); else as any connection.
   */
  readonly pipeline?: boolean;
}

/**
 * A connection of this instance's own, in direct mode only, for one kind of statement it runs
 * often or on a latency path (a claim, a batch of results, a handed enqueue): it skips the pool's
 * checkout, its statements stay prepared, and its session carries settings the app's pooled
 * sessions do not (statement_timeout, JIT off, ...). One use at a time: query() (or use()) returns
 * undefined when it is busy, not connected yet or broken, and the caller uses the pool, so it never
 * delays a statement. It connects on first use and, once lost, again at a later statement (not
 * sooner than RECONNECT_DELAY_MS after a failure).
 */
export class DedicatedConnection {
  private client: Client | undefined;
  private connecting = false;
  private busy = false;
  private retryAt = 0;
  private closed = false;

  constructor(
    private readonly db: AwaDatabase,
    private readonly options: ResolvedAwaOptions,
    private readonly settings: DedicatedConnectionSettings,
  ) {}

  /** Whether it may be used at all: not behind a transaction pooler (no session state there). */
  get enabled(): boolean {
    return this.options.connectionMode !== 'transaction-pooler' && !this.closed;
  }

  /** Runs `sql` on the connection, or returns undefined when it cannot now (use the pool). */
  query<P extends unknown[], R>(sql: SqlStatement<P, R>, ...[values]: SqlValues<NoInfer<P>>): Promise<R[]> | undefined {
    return this.use(sql.name, (client) => AwaDatabase.queryOn(client, sql, ...([values] as SqlValues<NoInfer<P>>)));
  }

  /**
   * Runs `body` on the connection (its statements, `name` in a timeout's error), or returns undefined
   * when it cannot now (use the pool). The connection is busy until body has settled.
   */
  protected use<R>(name: string, body: (client: Client) => Promise<R>): Promise<R> | undefined {
    const client = this.ready();
    if (!client) return undefined;
    this.busy = true;
    // The server ends a statement past statement_timeout; a connection that stops answering is dropped a second later.
    const timeout = this.options.statementTimeout;
    const stalled = timeout > 0 ? setTimeout(() => this.drop(client), timeout + 1_000).unref() : undefined;
    return body(client).then(
      (result) => {
        clearTimeout(stalled);
        this.busy = false;
        if (this.closed) this.drop(client);
        return result;
      },
      (error: unknown) => {
        clearTimeout(stalled);
        this.busy = false;
        // Cancelled, the session is sound; else a broken connection (or an unknown state): the next statement opens a new one.
        if (this.closed || sqlStateOf(error) !== SqlState.queryCanceled) this.drop(client);
        throw serverTimeoutOr(error, name, this.options.statementTimeout);
      },
    );
  }

  /**
   * Ends the connection (shutdown); statements then go through the pool. A statement running on it
   * ends first: the connection is ended once it has its answer.
   */
  close(): void {
    this.closed = true;
    if (this.client && !this.busy) this.drop(this.client);
  }

  /** The connected, idle client, or undefined (and a connect started, when due). */
  private ready(): Client | undefined {
    if (!this.enabled) return undefined;
    if (this.client) return this.busy ? undefined : this.client;
    if (!this.connecting && performance.now() >= this.retryAt) void this.connect();
    return undefined;
  }

  private async connect(): Promise<void> {
    this.connecting = true;
    let client: Client | undefined;
    try {
      client = this.db.createDedicatedClient(this.settings.applicationName, undefined, this.settings.pipeline);
      const opened = client;
      client.on('end', () => this.drop(opened));
      await client.connect();
      const timeout = this.options.statementTimeout;
      // Its session is ours, so it may carry the limit: the server stops a statement that outlives it.
      await AwaDatabase.queryOn(client, this.settings.session, [timeout > 0 ? String(timeout) : '0']);
      if (this.closed) throw new Error('closed while connecting');
      this.client = client;
    } catch {
      if (client) discardClient(client);
      this.retryAt = performance.now() + RECONNECT_DELAY_MS;
    } finally {
      this.connecting = false;
    }
  }

  private drop(client: Client): void {
    if (this.client === client) {
      this.client = undefined;
      this.busy = false;
    }
    discardClient(client);
  }
}
