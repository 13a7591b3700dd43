import { Inject, Injectable, Logger } from '@nestjs/common';
import type { SchedulerRegistry } from '@nestjs/schedule';
import { AWA_OPTIONS, AWA_SCHEDULER } from '../awa.constants.js';
import { AbortReasons, AwaMessages } from '../awa.messages.js';
import { AwaEvents } from '../events/awa-events.js';
import { InstanceSession } from '../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { timerName } from '../options/timer-name.js';
import { chunk } from '../util/chunk.js';
import { LeaseRegistry } from '../worker/lease-registry.js';
import { LeaseWriter } from '../worker/lease-writer.js';

export const HEARTBEAT_INTERVAL_NAME = 'awa.heartbeat';

export interface HeartbeatReport {
  /** Leases refreshed. */
  refreshed: number;
  /** Leases found no longer held; their signals were aborted. */
  lost: number;
  /** Statements spent on leases: ceil(in-flight / heartbeatBatchSize). */
  statements: number;
}

/**
 * Runs on every instance. Each heartbeatInterval it refreshes heartbeat_at of all this instance's
 * leases, one `unnest` UPDATE per heartbeatBatchSize chunk (LeaseWriter.heartbeat), and re-registers
 * the instance row.
 * A lease the UPDATE no longer finds was rescued: its handler's signal is aborted. A lease it finds
 * with a stored cancel request gets its handler cancelled.
 */
@Injectable()
export class HeartbeatService {
  private readonly logger = new Logger('AwaHeartbeat');
  private ticking: Promise<unknown> | undefined;
  /** On the monotonic clock: a wall-clock jump must not abandon (or keep) every handler. */
  private lastSuccess = performance.now();
  private sessionLossTimer: NodeJS.Timeout | undefined;

  /** @internal The module builds it; its parameters are the queue's internals. */
  constructor(
    private readonly leases: LeaseRegistry,
    private readonly writer: LeaseWriter,
    private readonly session: InstanceSession,
    @Inject(AWA_SCHEDULER) private readonly scheduler: SchedulerRegistry,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly events: AwaEvents,
  ) {
    this.session.onDisconnect(() => this.watchSessionLoss());
    this.session.onReconnect(() => clearTimeout(this.sessionLossTimer));
  }

  /** @internal The lifecycle (AwaLifecycle) starts and stops heartbeats, in order with the rest. */
  start(): void {
    this.lastSuccess = performance.now();
    const timer = setInterval(() => void this.tick(), this.options.heartbeatInterval);
    this.scheduler.addInterval(timerName(this.options, HEARTBEAT_INTERVAL_NAME), timer);
  }

  /** @internal */
  async stop(): Promise<void> {
    clearTimeout(this.sessionLossTimer);
    const name = timerName(this.options, HEARTBEAT_INTERVAL_NAME);
    if (this.scheduler.doesExist('interval', name)) this.scheduler.deleteInterval(name);
    await this.ticking;
  }

  /** One heartbeat now. Ticks never overlap. */
  async tick(): Promise<HeartbeatReport | undefined> {
    if (this.ticking) return undefined;
    const run = this.beat();
    this.ticking = run;
    try {
      return await run;
    } catch (error) {
      this.logger.warn(AwaMessages.tickFailed('heartbeat', String(error)));
      this.abandonIfStale();
      return undefined;
    } finally {
      this.ticking = undefined;
    }
  }

  private async beat(): Promise<HeartbeatReport> {
    const began = performance.now();
    await this.session.refresh();
    const jobs = this.leases.snapshot();
    const chunks = chunk(jobs, this.options.heartbeatBatchSize);
    const report: HeartbeatReport = { refreshed: 0, lost: 0, statements: chunks.length };
    const { lost, cancelRequested } =
      chunks.length > 0
        ? await this.writer.heartbeat(chunks)
        : { lost: new Set<string>(), cancelRequested: new Set<string>() };
    for (const job of jobs) {
      if (!lost.has(job.key)) {
        report.refreshed++;
        // A stored cancel request, also one whose NOTIFY this instance missed.
        if (cancelRequested.has(job.key) && !job.cancelRequested && !job.settled) job.cancel(AbortReasons.cancelled);
      } else if (!job.settled && this.leases.has(job)) {
        // Rescued while the handler runs or waits in the buffer: stop it (or drop it unstarted);
        // its result will be fenced out.
        job.markLost(AbortReasons.leaseLost);
        report.lost++;
      }
    }
    this.lastSuccess = performance.now();
    this.events.emit({ type: 'heartbeat', durationMs: this.lastSuccess - began, leases: jobs.length });
    return report;
  }

  /**
   * Without its session, this instance's liveness lock is gone: once that lasts longer than
   * heartbeatStaleAfter, the leader has surely rescued its leases. Abort their handlers, as for
   * failed heartbeats; their results stay fenced by run_lease.
   */
  private watchSessionLoss(): void {
    if (this.options.livenessProbe !== 'session') return;
    clearTimeout(this.sessionLossTimer);
    this.sessionLossTimer = setTimeout(() => {
      if (this.session.connected) return;
      const running = this.leases.snapshot().filter((job) => !job.settled);
      if (running.length > 0)
        this.logger.warn(AwaMessages.sessionLostTooLong(this.options.heartbeatStaleAfter, running.length));
      for (const job of running) job.abort(AbortReasons.leaseLost);
    }, this.options.heartbeatStaleAfter);
    this.sessionLossTimer.unref();
  }

  /**
   * Heartbeats have failed for longer than heartbeatStaleAfter: maintenance may have rescued any
   * of our leases. Abort their handlers; their results stay fenced by run_lease.
   */
  private abandonIfStale(): void {
    if (performance.now() - this.lastSuccess <= this.options.heartbeatStaleAfter) return;
    for (const job of this.leases.snapshot()) if (!job.settled) job.abort(AbortReasons.leaseLost);
  }
}
