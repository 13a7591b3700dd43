import { Logger } from '@nestjs/common';
import { JobEventMessages } from '../awa.messages.js';
import type { AwaDatabase } from '../database/awa-database.js';
import type { JobEventName } from '../decorators/on-job-event.decorator.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { JobEventsOptions } from '../options/job-events.options.js';
import { jobEventsSql } from '../sql/index.js';
import type { JobEventRow } from '../sql/job-events.sql.js';
import type { JobEvent } from './job-event.js';

/** A group as discovered at boot: its handler and what it subscribes to. */
export interface JobEventGroup {
  group: string;
  events: JobEventName[];
  /** Kind patterns ('*' any run of characters), ['*'] for every kind. */
  kinds: string[];
  /** Queues, ['*'] for every queue. */
  queues: string[];
  /** `Class.method`, for messages. */
  name: string;
  invoke: (event: JobEvent) => unknown;
}

/** A position in the event order. */
interface Position {
  tx: string;
  id: string;
}

const toEvent = (group: string, row: JobEventRow): JobEvent => ({
  id: row.id,
  group,
  event: row.event as JobEventName,
  jobId: row.job_id,
  kind: row.kind,
  queue: row.queue,
  state: row.state as JobState,
  attempt: row.attempt,
  at: row.at,
  ...(typeof row.payload?.error === 'string' ? { error: row.payload.error } : {}),
});

/**
 * Delivers one group's events on this instance: holds the group's lease (so no other instance delivers
 * them meanwhile), reads the settled events after its position, hands each subscribed one to the handler
 * and acknowledges it by moving the position past it. A handler that throws leaves the position where it
 * is: the same event comes again after a backoff, and the group waits for it (order is kept). Events of
 * other groups are passed over with the next acknowledgement. When it cannot take the lease (another
 * instance holds it) it tries again every pollInterval, so it takes over once that lease runs out.
 */
export class JobEventConsumer {
  private readonly logger: Logger;
  private stopped = false;
  private wake: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private holding = false;
  /**
   * When the last claim, acknowledgement or renewal that held the lease was sent (performance.now()):
   * the lease lasts leaseDuration from the server's clock at that statement, so from no earlier than this.
   */
  private heldSince = 0;

  constructor(
    private readonly db: AwaDatabase,
    private readonly options: Required<JobEventsOptions>,
    readonly group: JobEventGroup,
    private readonly holder: string,
    /** The named AwaModule whose database holds the group (its log lines say it); undefined: the default. */
    module?: string,
  ) {
    this.logger = new Logger(module === undefined ? 'AwaJobEvents' : `AwaJobEvents:${module}`);
  }

  start(): void {
    this.stopped = false;
    this.loop = this.run();
  }

  /**
   * Stops after the event being handled, and gives the lease up so another instance takes over at once.
   * A handler still running after `waitMs` is left behind: the lease is then kept, and runs out.
   */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    this.wake?.();
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      this.loop?.then(() => true),
      new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), waitMs))),
    ]);
    clearTimeout(timer);
    if (ended && this.holding) await this.db.execute(jobEventsSql.releaseGroup, [this.group.group, this.holder]);
    this.holding = false;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let pause = this.options.pollInterval;
      try {
        pause = await this.pass();
      } catch (error) {
        this.logger.warn(JobEventMessages.deliveryFailed(this.group.group, String(error)));
      }
      if (pause > 0) await this.sleep(pause);
    }
  }

  /** One claim and read; returns how long to wait before the next (0: more are waiting). */
  private async pass(): Promise<number> {
    const { group } = this.group;
    const sentAt = performance.now();
    const [claimed] = await this.db.query(jobEventsSql.claimGroup, [group, this.holder, this.options.leaseDuration]);
    this.holding = claimed !== undefined;
    if (!claimed) return this.options.pollInterval;
    this.heldSince = sentAt;
    if (claimed.failed_ms_ago !== null) {
      // The next event's last delivery failed (here or on a previous holder): wait out its backoff, then
      // claim again.
      const wait = this.backoff(claimed.failures) - claimed.failed_ms_ago;
      if (wait > 0) return wait;
    }
    const rows = await this.db.query(jobEventsSql.readGroupEvents, [
      group,
      claimed.position_tx,
      claimed.position_id,
      this.options.batchSize,
    ]);
    let passed: Position | undefined;
    for (const row of rows) {
      if (this.stopped) break;
      if (!row.matched) {
        passed = row;
        continue;
      }
      const outcome = await this.deliver(row);
      if (outcome === 'failed') return 0; // claim again: the backoff above applies
      if (outcome === 'lost') return this.options.pollInterval;
      passed = undefined;
    }
    if (passed && !(await this.ack(passed))) return this.options.pollInterval;
    return rows.length < this.options.batchSize ? this.options.pollInterval : 0;
  }

  /**
   * Hands one event to the handler (renewing the lease meanwhile) and acknowledges it. Only while the
   * lease is surely held: a read or an acknowledgement that outlasted a third of it (a slow database)
   * renews it first, else another instance may have taken the group over and delivered this event.
   */
  private async deliver(row: JobEventRow): Promise<'acked' | 'failed' | 'lost'> {
    const renewEvery = Math.max(1, Math.floor(this.options.leaseDuration / 3));
    if (performance.now() - this.heldSince >= renewEvery && !(await this.renew())) return this.lost();
    const renew = setInterval(
      // The next one tries again; a lost lease shows at the acknowledgement.
      () => void this.renew().catch(() => undefined),
      renewEvery,
    );
    try {
      await this.group.invoke(toEvent(this.group.group, row));
    } catch (error) {
      clearInterval(renew);
      const [counted] = await this.db.query(jobEventsSql.recordGroupFailure, [
        this.group.group,
        this.holder,
        String(error instanceof Error ? (error.stack ?? error.message) : error),
      ]);
      if (!counted) return this.lost();
      this.logger.warn(
        JobEventMessages.handlerFailed(
          this.group.group,
          row.id,
          counted.failures,
          this.backoff(counted.failures),
          String(error),
        ),
      );
      return 'failed';
    } finally {
      clearInterval(renew);
    }
    return (await this.ack(row)) ? 'acked' : this.lost();
  }

  /** Renews the lease if this instance still holds it (never takes it back from a replay or a new holder). */
  private async renew(): Promise<boolean> {
    const sentAt = performance.now();
    const [renewed] = await this.db.query(jobEventsSql.renewGroup, [
      this.group.group,
      this.holder,
      this.options.leaseDuration,
    ]);
    if (renewed) this.heldSince = Math.max(this.heldSince, sentAt);
    return renewed !== undefined;
  }

  private async ack(position: Position): Promise<boolean> {
    const sentAt = performance.now();
    const [acked] = await this.db.query(jobEventsSql.ackGroup, [
      this.group.group,
      this.holder,
      position.tx,
      position.id,
      this.options.leaseDuration,
    ]);
    if (acked) this.heldSince = sentAt;
    return acked !== undefined;
  }

  private lost(): 'lost' {
    this.holding = false;
    this.logger.warn(JobEventMessages.leaseLost(this.group.group));
    return 'lost';
  }

  private backoff(failures: number): number {
    const { retryBaseDelay, retryMaxDelay } = this.options;
    return Math.min(retryBaseDelay * 2 ** Math.min(failures - 1, 30), retryMaxDelay);
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
