import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomInt, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Client, QueryResultRow } from 'pg';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolver.js';
import { instancesSql, schemaSql, type SqlStatement } from '../sql/index.js';

type NotificationHandler = (payload: string) => void;

/** Longest wait between reconnect attempts of the session. */
export const MAX_RECONNECT_DELAY_MS = 2_000;

/**
 * This instance's identity and its one dedicated PostgreSQL session. The session carries
 * everything that is session-scoped: the liveness lock (released by PostgreSQL the moment the
 * process dies), LISTEN, and the maintenance leader lock. If the connection drops, all of them
 * are lost together; the session reconnects with backoff and re-establishes them.
 */
@Injectable()
export class InstanceSession {
  /** Opaque and never parsed: hostname and pid live in their own columns. */
  readonly id = randomUUID();
  readonly hostname = hostname();
  readonly pid = process.pid;
  private lockKey = randomInt(1, 2 ** 31 - 1);
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private reconnectDelay = 100;
  private connectedAt = 0;
  private reconnects = 0;
  private queues: string[] = [];
  /** { kind: queue } of this instance's handlers, in its row for the leader's unhandled-kinds check. */
  private handlers: Record<string, string> = {};
  private readonly channels = new Map<string, NotificationHandler[]>();
  private readonly reconnectListeners: Array<() => void> = [];
  private readonly disconnectListeners: Array<() => void> = [];
  private readonly logger = new Logger('AwaInstance');

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  get connected(): boolean {
    return this.client !== undefined;
  }

  /**
   * Whether the session is down, or came back from a lost connection less than `ms` ago. The first
   * connection at boot does not count: only a reconnect means others may be reconnecting too.
   */
  reconnectedWithin(ms: number): boolean {
    if (!this.client) return true;
    return this.reconnects > 0 && Date.now() - this.connectedAt < ms;
  }

  /** Subscribe before start(): channels are LISTENed on every (re)connect. */
  onNotification(channel: string, handler: NotificationHandler): void {
    this.channels.set(channel, [...(this.channels.get(channel) ?? []), handler]);
  }

  /** Called after a reconnect (notifications may have been missed meanwhile). */
  onReconnect(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  /** Called when the session is lost (and with it the locks it held). */
  onDisconnect(listener: () => void): void {
    this.disconnectListeners.push(listener);
  }

  async start(queues: string[], handlers: Record<string, string> = {}): Promise<void> {
    this.queues = queues;
    this.handlers = handlers;
    await this.connect();
  }

  /** Runs a statement on the session connection. Throws if it is down. */
  async query<R extends QueryResultRow = any>(sql: SqlStatement, values: unknown[] = []): Promise<R[]> {
    if (!this.client) throw new Error('the awa instance session is not connected');
    return AwaDatabase.queryOn<R>(this.client, sql, values);
  }

  /** Re-registers the instance row (heartbeat tick): a wrongly reaped instance comes back. */
  async refresh(): Promise<void> {
    await this.db.query(instancesSql.upsertInstance, [this.id, this.hostname, this.pid, this.queues, this.lockKey, JSON.stringify(this.handlers)]);
  }

  async stop(): Promise<void> {
    this.closed = true;
    await this.connecting?.catch(() => undefined);
    try {
      await this.db.query(instancesSql.deleteInstance, [this.id]);
    } catch (error) {
      this.logger.warn(AwaMessages.tickFailed('deregistering the instance', String(error)));
    }
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private connect(): Promise<void> {
    this.connecting ??= this.establish().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  private async establish(): Promise<void> {
    const client = this.db.createDedicatedClient(`awa:${this.id}`);
    await client.connect();
    try {
      if (this.options.livenessProbe === 'session') await this.acquireLivenessLock(client);
      for (const channel of this.channels.keys()) await client.query(schemaSql.listen(channel).text);
      client.on('notification', (msg) => {
        for (const handler of this.channels.get(msg.channel) ?? []) handler(msg.payload ?? '');
      });
      client.on('end', () => this.lost(client));
      this.client = client;
      this.connectedAt = Date.now();
      await this.refresh();
      this.reconnectDelay = 100;
    } catch (error) {
      await client.end().catch(() => undefined);
      throw error;
    }
  }

  private async acquireLivenessLock(client: Client): Promise<void> {
    for (;;) {
      const [{ acquired }] = await AwaDatabase.queryOn<{ acquired: boolean }>(client, instancesSql.acquireLivenessLock, [this.lockKey]);
      if (acquired) return;
      this.lockKey = randomInt(1, 2 ** 31 - 1); // another instance drew the same key
    }
  }

  private lost(client: Client): void {
    if (this.client !== client) return;
    this.client = undefined;
    for (const listener of this.disconnectListeners) listener();
    if (this.closed) return;
    this.logger.warn('instance session lost; reconnecting');
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, MAX_RECONNECT_DELAY_MS);
    setTimeout(() => {
      if (this.closed) return;
      this.connect().then(
        () => {
          this.reconnects++;
          this.reconnectListeners.forEach((listener) => listener());
        },
        (error) => {
          this.logger.warn(AwaMessages.tickFailed('reconnecting the instance session', String(error)));
          this.scheduleReconnect();
        },
      );
    }, delay).unref();
  }
}
