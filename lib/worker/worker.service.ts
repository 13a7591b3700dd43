import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  AWA_CANCEL_CHANNEL,
  AWA_CONTROL_CHANNEL,
  AWA_HANDOFF_CHANNEL,
  AWA_JOBS_CHANNEL,
  AWA_OPTIONS,
} from '../awa.constants.js';
import { AwaExplorer } from '../awa.explorer.js';
import { AwaMessages, AbortReasons, RescueErrors } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import { AwaEvents } from '../events/awa-events.js';
import { InstanceSession } from '../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import type { InFlightJob } from './in-flight-job.js';
import { ClaimConnection } from './claim-connection.js';
import { LeaseRegistry } from './lease-registry.js';
import { LeaseWriter } from './lease-writer.js';
import { QueueWorker } from './queue-worker.js';
import { handedOffJob } from './handed-off-job.js';
import { RecentKeys } from '../util/recent-keys.js';
import { handoffSql } from '../sql/index.js';
import type { ClaimedJobRow } from '../sql/claim.sql.js';

/** Handed attempts remembered: far more than can be handed between a reconnect and its read. */
const HANDED_SEEN = 10_000;

/** The workers of this instance, one per queue it has handlers for. */
@Injectable()
export class WorkerService {
  private readonly workers = new Map<string, QueueWorker>();
  private readonly logger = new Logger('AwaWorkers');
  /** Plain claims' own connection (direct mode): see ClaimConnection. */
  private readonly claims: ClaimConnection;
  /** The handed attempts (job id and run lease) this instance took, the last HANDED_SEEN of them. */
  private readonly handedSeen = new RecentKeys(HANDED_SEEN);

  constructor(
    private readonly db: AwaDatabase,
    private readonly explorer: AwaExplorer,
    private readonly session: InstanceSession,
    private readonly leases: LeaseRegistry,
    private readonly writer: LeaseWriter,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly events: AwaEvents,
  ) {
    this.claims = new ClaimConnection(db, options);
  }

  /**
   * LISTENs for what wakes the workers, if this instance has any: an instance that only enqueues
   * (no handlers) is not woken, nor is its session's backend, by every job the others insert.
   * Called before the session connects, so the channels are LISTENed from the start.
   */
  subscribe(): void {
    if (this.queues.length === 0) return;
    this.session.onNotification(AWA_JOBS_CHANNEL, (queue) => this.workers.get(queue)?.wake());
    // The request is stored on the lease too: a missed notification reaches the job by heartbeat.
    this.session.onNotification(AWA_CANCEL_CHANNEL, (id) =>
      this.leases.byJobId(id).forEach((job) => job.cancel(AbortReasons.cancelled)),
    );
    // A resumed queue is claimed from at once (a pause needs nothing: every claim reads it).
    this.session.onNotification(AWA_CONTROL_CHANNEL, (payload) => {
      if (payload.startsWith('resume:')) this.wake(payload.slice('resume:'.length));
    });
    this.session.onReconnect(() => this.workers.forEach((w) => w.wake()));
    if (this.queues.some((queue) => this.options.queues.get(queue)?.handoff)) {
      this.session.onNotification(AWA_HANDOFF_CHANNEL, (payload) => {
        const handed = handedOffJob(payload, this.session.id);
        if (handed) this.accept(handed);
      });
      // A job handed to this instance while its session was down was notified to no one: run it now.
      this.session.onReconnect(() => void this.adoptHandoffs());
    }
  }

  /**
   * A job an enqueue handed to this instance, once: its notification and the read after a reconnect
   * may both bring it, in either order, and the first may have run it to its end before the second
   * comes (its lease no longer registered), so the handed attempts seen are remembered.
   */
  private accept(row: ClaimedJobRow): void {
    if (this.handedSeen.add(`${row.id}:${row.run_lease}`)) this.workers.get(row.queue)?.accept(row);
  }

  /** Runs the jobs handed to this instance that it does not know (see handoffSql.handedOffJobsOf). */
  private async adoptHandoffs(): Promise<void> {
    try {
      for (const row of await this.db.query(handoffSql.handedOffJobsOf, [this.session.id])) this.accept(row);
    } catch (error) {
      // Not lost: their leases are not heartbeated, and the stale-heartbeat rescue gives them back.
      this.logger.warn(AwaMessages.operationFailed('reading the jobs handed to this instance', String(error)));
    }
  }

  /** Queues this instance runs jobs from. */
  get queues(): string[] {
    return [...this.explorer.kindsByQueue().keys()];
  }

  start(): void {
    for (const [queue, kinds] of this.explorer.kindsByQueue()) {
      const worker = new QueueWorker(this.options.queues.get(queue)!, kinds, {
        db: this.db,
        leases: this.leases,
        writer: this.writer,
        events: this.events,
        instanceId: this.session.id,
        handlers: this.explorer.handlers,
        claims: this.claims,
        canClaim: () => this.options.livenessProbe === 'heartbeat' || this.session.connected,
      });
      this.workers.set(queue, worker);
      worker.start();
    }
  }

  /**
   * Stops claiming, waits up to shutdownTimeout for running handlers, aborts the rest and gives
   * their jobs back (without spending an attempt), then waits for pending results to be written.
   */
  async stop(): Promise<void> {
    const workers = [...this.workers.values()];
    // Claimed but never started (also by a claim that returns after this): give them back at once,
    // so other instances can run them now.
    const unstarted = (await Promise.all(workers.map((w) => w.stopClaiming()))).flat();
    this.claims.close();
    await this.release(unstarted, false);
    const leftovers = (await Promise.all(workers.map((w) => w.drain(this.options.shutdownTimeout)))).flat();
    if (leftovers.length > 0) {
      this.logger.warn(AwaMessages.shutdownTimeout(leftovers.length, this.options.shutdownTimeout));
      await this.release(leftovers, true);
    }
    // Every settled handler's result is written (its batch flushed) before the instance goes.
    await Promise.all(workers.map((w) => w.settleWrites()));
    this.writer.closeConnection();
    this.workers.clear();
  }

  /** `started`: their handlers ran (these releases are counted, see SHUTDOWN_RELEASE_LIMIT). */
  private async release(jobs: InFlightJob[], started: boolean): Promise<void> {
    if (jobs.length === 0) return;
    jobs.forEach((job) => job.release(AbortReasons.shutdown));
    // Inside job.transaction the lease is fenced until it ends: not released (that would wait on the
    // fence). Its transaction is waited for (at most heartbeatStaleAfter, the server's limit on a silent
    // one), so the DataSource is not closed under it: it commits, or the job is rescued later.
    const fenced = jobs.filter((job) => job.transactionOpen);
    const releasable = jobs.filter((job) => !job.transactionOpen && !job.completedInTransaction);
    try {
      await this.writer.release(releasable, RescueErrors.releasedOnShutdown, started);
    } catch (error) {
      // Not lost: the leases stay, stop being heartbeated, and maintenance rescues them.
      this.logger.error(AwaMessages.operationFailed('releasing jobs on shutdown', String(error)));
    }
    await Promise.all(fenced.map((job) => this.writer.transactions.settled(job)));
    jobs.forEach((job) => this.leases.remove(job));
  }

  /** @internal When each queue's claim loop last ticked (performance.now()), for the health check. */
  lastTicks(): Map<string, number> {
    return new Map([...this.workers].map(([queue, worker]) => [queue, worker.lastTickAt]));
  }

  /** Wakes the worker of `queue` (used after an enqueue on this instance). */
  wake(queue: string): void {
    this.workers.get(queue)?.wake();
  }
}
