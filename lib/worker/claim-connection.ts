import type { Client } from 'pg';
import { AwaDatabase } from '../database/awa-database.js';
import { StatementTimeoutError } from '../errors/statement-timeout.error.js';
import { discardClient } from '../instance/pooler-probe.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { sessionSql, workerSql, type SqlParams } from '../sql/index.js';
import type { PlainClaimedRow } from '../sql/worker.sql.js';
import { SqlState, sqlStateOf } from '../database/sql-state.js';

/** After a failed connect, the claims go through the pool for this long before the next try. */
export const CLAIM_RECONNECT_DELAY_MS = 1_000;

/** SQLSTATE of a statement cancelled by statement_timeout. */

/** The parameters of a plain claim (workerSql.claimJobs). */
type ClaimParams = SqlParams<typeof workerSql.claimJobs>;

/**
 * This instance's own connection for plain claims (no rate limit, no key concurrency), in direct
 * mode only: an idle worker's claim skips the pool's checkout and runs on a connection whose
 * statement is already prepared. Its commits are asynchronous (synchronous_commit off): the claim
 * returns before its WAL flush, a fsync sooner. A claim lost in a server crash is safe: its jobs are
 * claimable again, and the next claim's run lease is above the lost one (NEXT_RUN_LEASE), so the lost
 * attempt's writes fail the fence. Any later synchronous commit (a completion, a heartbeat) flushes it.
 *
 * One statement at a time: a claim that finds it busy (another queue's claim), not connected yet or
 * broken goes through the pool as before, so it never delays a claim. It connects on first use and,
 * once lost, again at a later claim (not sooner than CLAIM_RECONNECT_DELAY_MS after a failure).
 */
export class ClaimConnection {
  private client: Client | undefined;
  private connecting = false;
  private busy = false;
  private retryAt = 0;
  private closed = false;

  constructor(
    private readonly db: AwaDatabase,
    private readonly options: ResolvedAwaOptions,
  ) {}

  /** Whether claims may use it at all: not behind a transaction pooler (no session state there). */
  get enabled(): boolean {
    return this.options.connectionMode !== 'transaction-pooler' && !this.closed;
  }

  /** Claims on the dedicated connection, or returns undefined when it cannot now (use the pool). */
  claim(params: ClaimParams): Promise<PlainClaimedRow[]> | undefined {
    const client = this.ready();
    if (!client) return undefined;
    this.busy = true;
    // The server ends a claim past statement_timeout; a connection that stops answering is dropped a second later.
    const timeout = this.options.statementTimeout;
    const stalled = timeout > 0 ? setTimeout(() => this.drop(client), timeout + 1_000).unref() : undefined;
    return AwaDatabase.queryOn(client, workerSql.claimJobs, params).then(
      (rows) => {
        clearTimeout(stalled);
        this.busy = false;
        return rows;
      },
      (error: unknown) => {
        clearTimeout(stalled);
        this.busy = false;
        if (sqlStateOf(error) === SqlState.queryCanceled)
          throw new StatementTimeoutError(workerSql.claimJobs.name, this.options.statementTimeout, { cause: error });
        this.drop(client); // a broken connection (or an unknown state): the next claim opens a new one
        throw error;
      },
    );
  }

  /** Ends the connection (shutdown); claims then go through the pool. */
  close(): void {
    this.closed = true;
    if (this.client) this.drop(this.client);
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
      // Not `awa:<id>`, the instance session's name, which tools and tests look for.
      client = this.db.createDedicatedClient('awa-claims');
      const opened = client;
      client.on('end', () => this.drop(opened));
      await client.connect();
      const timeout = this.options.statementTimeout;
      // The server stops a claim that outlives statementTimeout: its session is ours, so it may carry the limit.
      await AwaDatabase.queryOn(client, sessionSql.setClaimSession, [timeout > 0 ? String(timeout) : '0']);
      if (this.closed) throw new Error('closed while connecting');
      this.client = client;
    } catch {
      if (client) discardClient(client);
      this.retryAt = performance.now() + CLAIM_RECONNECT_DELAY_MS;
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
