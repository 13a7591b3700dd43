import type { Client } from 'pg';
import { AwaDatabase } from '../database/awa-database.js';
import { instancesSql } from '../sql/index.js';
import { discardClient } from '../database/dedicated-connection.js';
import { within } from '../util/within.js';
import type { LivenessTiming } from './liveness-timing.js';

/**
 * Whether the database answers, behind a transaction pooler, where the instance keeps no session:
 * every probeInterval a `SELECT 1` on a connection of its own (to the pooler, which lends it a
 * server connection for that one statement only), answered within probeTimeout, connecting
 * included. Not through the pool: a pool busy with the app's work is not a database that is down,
 * and pg's default connectionTimeoutMillis (0) would let a checkout wait for ever. A probe that
 * fails or times out drops its connection; the next one opens a new one.
 */
export class PoolerProbe {
  private client: Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private probing = false;
  private ok = true;

  constructor(
    private readonly db: AwaDatabase,
    private readonly timing: LivenessTiming,
    private readonly applicationName: string,
  ) {}

  /** Whether the last probe was answered in time (true until the first probe says otherwise). */
  get answered(): boolean {
    return this.ok;
  }

  start(): void {
    this.ok = true;
    this.timer = setInterval(() => void this.probe(), this.timing.probeInterval);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.drop();
  }

  private async probe(): Promise<void> {
    if (this.probing) return;
    this.probing = true;
    try {
      await within(this.ask(), this.timing.probeTimeout);
      this.ok = true;
    } catch {
      this.ok = false;
      this.drop();
    } finally {
      this.probing = false;
    }
  }

  private async ask(): Promise<void> {
    let client = this.client;
    if (!client) {
      const opened = this.db.createDedicatedClient(this.applicationName, this.timing.probeTimeout);
      // Closed by the other end while idle (a pooler's client_idle_timeout): the next probe reconnects.
      opened.on('end', () => this.client === opened && (this.client = undefined));
      client = this.client = opened;
      await client.connect();
    }
    await AwaDatabase.queryOn(client, instancesSql.probeSession);
  }

  private drop(): void {
    const client = this.client;
    this.client = undefined;
    if (client) discardClient(client);
  }
}
