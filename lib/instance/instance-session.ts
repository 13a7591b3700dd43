import { Inject, Injectable, Logger } from '@nestjs/common';
import { randomInt, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Client } from 'pg';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { instanceSettings } from '../options/instance-settings.js';
import { instancesSql, sessionSql, type SqlStatement, type SqlValues } from '../sql/index.js';
import { SerialLane } from '../util/serial-lane.js';
import { within } from '../util/within.js';
import { FIRST_RECONNECT_DELAY_MS, livenessTiming, type LivenessTiming } from './liveness-timing.js';
import { discardClient } from '../database/dedicated-connection.js';
import { PoolerProbe } from './pooler-probe.js';

type NotificationHandler = (payload: string) => void;

/** Longest wait between reconnect attempts of the session. */
export const MAX_RECONNECT_DELAY_MS = 2_000;

/**
 * This instance's identity and its one dedicated PostgreSQL session. The session carries
 * everything that is session-scoped: the liveness lock (released by PostgreSQL the moment the
 * process dies), LISTEN, and the maintenance leader lock. If the connection drops, all of them
 * are lost together; the session reconnects with backoff and re-establishes them. A probe checks
 * the session every few seconds, so that a connection that went silent is noticed as well.
 * There is at most one dedicated connection at a time, and a failed start() leaves none.
 */
@Injectable()
export class InstanceSession {
  /** Opaque and never parsed: hostname and pid live in their own columns. */
  readonly id = randomUUID();
  readonly hostname = hostname();
  readonly pid = process.pid;
  private lockKey = randomInt(1, 2 ** 31 - 1);
  private client: Client | undefined;
  /** One statement at a time on the session (the probe and the leader's statements would overlap). */
  private lane = new SerialLane();
  private connecting: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private probing = false;
  private closed = false;
  private reconnectDelay = FIRST_RECONNECT_DELAY_MS;
  private connectedAt = 0;
  private reconnects = 0;
  /** The backend pid of the last session, ended on reconnect if it lingers. */
  private previousBackend: number | undefined;
  private queues: string[] = [];
  private readonly timing: LivenessTiming;
  /** { kind: queue } of this instance's handlers, in its row for the leader's unhandled-kinds check. */
  private handlers: Record<string, string> = {};
  /** Names of the schedules this instance declares in code, in its row: none is pruned while it lives. */
  private schedules: string[] = [];
  private readonly channels = new Map<string, NotificationHandler[]>();
  private readonly reconnectListeners: Array<() => void> = [];
  private readonly disconnectListeners: Array<() => void> = [];
  private readonly logger = new Logger('AwaInstance');
  /** What rescues of this instance's leases follow, as JSON for its row. */
  private readonly settings: string;
  /** Behind a transaction pooler (no session): whether the database answers. */
  private readonly poolerProbe: PoolerProbe;

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {
    this.timing = livenessTiming(options.orphanSweepInterval);
    this.settings = JSON.stringify(instanceSettings(options));
    this.poolerProbe = new PoolerProbe(db, this.timing, `awa:${this.id}:probe`);
  }

  get connected(): boolean {
    return this.client !== undefined;
  }

  /**
   * Whether the database answers this instance: the session is connected (its probe answered
   * within probeTimeout); behind a transaction pooler, the last probe on a connection of its own
   * answered within probeTimeout (PoolerProbe). Either way a database that stops answering is
   * noticed within probeInterval + probeTimeout.
   */
  get answering(): boolean {
    return this.options.connectionMode === 'transaction-pooler' ? this.poolerProbe.answered : this.connected;
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

  /** Connects, or closes whatever it opened and rejects: a failed boot leaves nothing running. */
  async start(queues: string[], handlers: Record<string, string> = {}, schedules: string[] = []): Promise<void> {
    this.queues = queues;
    this.handlers = handlers;
    this.schedules = schedules;
    this.closed = false;
    // connectionMode 'transaction-pooler': no dedicated session (the pooler keeps none): no LISTEN,
    // no liveness lock; the instance row, refreshed by each heartbeat tick, is its liveness, and a
    // probe of its own tells whether the database answers.
    if (this.options.connectionMode === 'transaction-pooler') {
      await this.refresh();
      return this.poolerProbe.start();
    }
    try {
      await this.connect();
    } catch (error) {
      await this.stop();
      throw error;
    }
    this.probeTimer = setInterval(() => void this.probe(), this.timing.probeInterval);
    this.probeTimer.unref();
  }

  /** Runs a statement on the session connection. Throws if it is down. */
  async query<P extends unknown[], R>(sql: SqlStatement<P, R>, ...values: SqlValues<NoInfer<P>>): Promise<R[]> {
    const client = this.client;
    if (!client) throw new Error('the awa instance session is not connected');
    return this.lane.run(() => AwaDatabase.queryOn(client, sql, ...values));
  }

  /** Re-registers the instance row (heartbeat tick): a wrongly reaped instance comes back. */
  async refresh(): Promise<void> {
    await this.db.query(instancesSql.upsertInstance, [
      this.id,
      this.hostname,
      this.pid,
      this.queues,
      this.lockKey,
      this.settings,
      JSON.stringify(this.handlers),
      this.schedules,
    ]);
  }

  async stop(): Promise<void> {
    this.closed = true;
    clearInterval(this.probeTimer);
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.poolerProbe.stop();
    await this.connecting?.catch(() => undefined);
    try {
      await this.db.query(instancesSql.deleteInstance, [this.id]);
    } catch (error) {
      this.logger.warn(AwaMessages.operationFailed('deregistering the instance', String(error)));
    }
    const client = this.client;
    this.client = undefined;
    if (!client) return;
    // A polite end, but bounded: on a stalled connection end() would wait forever for the server.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      client.end().catch(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, this.timing.probeTimeout))),
    ]);
    clearTimeout(timer);
    discardClient(client);
  }

  private connect(): Promise<void> {
    this.connecting ??= this.establish().finally(() => (this.connecting = undefined));
    return this.connecting;
  }

  /**
   * Opens a connection and makes it the session only once all is set up (lock, LISTEN, instance
   * row). Until then its loss is this attempt's failure, never a second reconnect loop.
   */
  private async establish(): Promise<void> {
    const client = this.db.createDedicatedClient(`awa:${this.id}`);
    let ended = false;
    client.on('end', () => {
      ended = true;
      this.lost(client, 'connection closed');
    });
    try {
      await client.connect();
      await this.endPreviousBackend(client);
      if (this.options.livenessProbe === 'session') await this.acquireLivenessLock(client);
      for (const channel of this.channels.keys()) await client.query(sessionSql.listen(channel).text);
      client.on('notification', (msg) => {
        if (this.client !== client) return;
        for (const handler of this.channels.get(msg.channel) ?? []) handler(msg.payload ?? '');
      });
      await this.refresh();
      if (ended) throw new Error('the awa instance session closed while it was being set up');
      if (this.closed) throw new Error('the awa instance session was stopped while connecting');
      this.client = client;
      this.lane = new SerialLane();
      this.previousBackend = (client as unknown as { processID?: number }).processID;
      this.connectedAt = Date.now();
      this.reconnectDelay = FIRST_RECONNECT_DELAY_MS;
    } catch (error) {
      discardClient(client);
      throw error;
    }
  }

  /** A lingering backend of ours still holds our old locks; the new session must not wait for the server to notice. */
  private async endPreviousBackend(client: Client): Promise<void> {
    if (this.previousBackend === undefined) return;
    try {
      await AwaDatabase.queryOn(client, instancesSql.terminateStaleSession, [this.previousBackend, `awa:${this.id}`]);
    } catch (error) {
      this.logger.warn(AwaMessages.operationFailed('ending the previous instance session', String(error)));
    }
  }

  private async acquireLivenessLock(client: Client): Promise<void> {
    for (;;) {
      const [lock] = await AwaDatabase.queryOn(client, instancesSql.acquireLivenessLock, [this.lockKey]);
      if (lock?.acquired) return;
      this.lockKey = randomInt(1, 2 ** 31 - 1); // another instance drew the same key, or our old backend still holds it
    }
  }

  /** A probe unanswered within probeTimeout means the session is gone, whatever the socket says. */
  private async probe(): Promise<void> {
    const client = this.client;
    if (!client || this.probing || this.closed) return;
    this.probing = true;
    try {
      await within(
        this.lane.run(() => AwaDatabase.queryOn(client, instancesSql.probeSession)),
        this.timing.probeTimeout,
      );
    } catch (error) {
      this.lost(client, `probe failed: ${String(error)}`);
    } finally {
      this.probing = false;
    }
  }

  private lost(client: Client, why: string): void {
    if (this.client !== client) return;
    this.client = undefined;
    discardClient(client);
    for (const listener of this.disconnectListeners) listener();
    if (this.closed) return;
    this.logger.warn(AwaMessages.sessionLost(why));
    this.scheduleReconnect();
  }

  /** The one reconnect loop: a new attempt is scheduled only when none is pending or running. */
  private scheduleReconnect(): void {
    if (this.closed || this.reconnectTimer || this.connecting) return;
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, MAX_RECONNECT_DELAY_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.closed) return;
      this.connect().then(
        () => {
          this.reconnects++;
          this.reconnectListeners.forEach((listener) => listener());
        },
        (error) => {
          this.logger.warn(AwaMessages.operationFailed('reconnecting the instance session', String(error)));
          this.scheduleReconnect();
        },
      );
    }, delay);
    this.reconnectTimer.unref();
  }
}
