import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from './awa.constants.js';
import { AwaHealthMessages } from './awa.messages.js';
import { InstanceSession } from './instance/instance-session.js';
import { MaintenanceService } from './maintenance/maintenance.service.js';
import type { ResolvedAwaOptions } from './options/awa-options.resolved.js';
import { WorkerService } from './worker/worker.service.js';

/** Added to 3 poll intervals before a claim loop counts as stalled: room for a slow claim and a busy event loop. */
export const CLAIM_LOOP_STALL_MARGIN_MS = 2_000;

/** How one queue's claim loop is doing. */
export interface AwaQueueStatus {
  /** Milliseconds since its claim loop last ticked. */
  lastTickMsAgo: number;
  /** Longer ago than 3 × pollInterval + 2 s. */
  stalled: boolean;
}

/** A snapshot of this instance, as the health indicator reports it. */
export interface AwaStatusSnapshot {
  healthy: boolean;
  /** Why it is not healthy (empty when healthy). */
  problems: string[];
  instanceId: string;
  /** 'testing': the `testing: true` manual mode, in which nothing runs in the background. */
  mode: 'running' | 'testing';
  /**
   * The database answers: the instance session is up ('transaction-pooler': the last probe on the
   * instance's own connection answered). Within probeInterval + probeTimeout of PostgreSQL going
   * silent, this turns false.
   */
  connected: boolean;
  leader: boolean;
  /** All bundled migrations were found applied at boot (the app does not boot otherwise). */
  schemaVerified: boolean;
  shuttingDown: boolean;
  queues: Record<string, AwaQueueStatus>;
  /** With several AwaModules (health indicator): each named module's snapshot, by name. */
  modules?: Record<string, AwaStatusSnapshot>;
}

/**
 * @internal What the health indicator reads: the lifecycle marks boot and shutdown here, the rest
 * is read from the instance session, maintenance and the claim loops.
 */
@Injectable()
export class AwaStatus {
  private schemaVerified = false;
  private started = false;
  private stopping = false;

  constructor(
    private readonly session: InstanceSession,
    private readonly maintenance: MaintenanceService,
    private readonly workers: WorkerService,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  /** @internal */
  markSchemaVerified(): void {
    this.schemaVerified = true;
  }

  /** @internal */
  markStarted(): void {
    this.started = true;
  }

  /** @internal */
  markShuttingDown(): void {
    this.stopping = true;
  }

  snapshot(): AwaStatusSnapshot {
    const testing = this.options.testing;
    const connected = this.started && this.session.answering;
    const now = performance.now();
    const queues: Record<string, AwaQueueStatus> = {};
    for (const [queue, at] of this.workers.lastTicks()) {
      const poll = this.options.queues.get(queue)?.pollInterval ?? 0;
      const ago = Math.max(0, Math.round(now - at));
      queues[queue] = { lastTickMsAgo: ago, stalled: ago > 3 * poll + CLAIM_LOOP_STALL_MARGIN_MS };
    }
    const problems: string[] = [];
    if (this.stopping) problems.push(AwaHealthMessages.shuttingDown);
    if (!this.schemaVerified) problems.push(AwaHealthMessages.schemaNotVerified);
    if (!testing) {
      if (!this.started) problems.push(AwaHealthMessages.notStarted);
      else if (!connected) problems.push(AwaHealthMessages.notConnected(this.options.connectionMode));
      for (const [queue, q] of Object.entries(queues))
        if (q.stalled) problems.push(AwaHealthMessages.claimLoopStalled(queue, q.lastTickMsAgo));
    }
    return {
      healthy: problems.length === 0,
      problems,
      instanceId: this.session.id,
      mode: testing ? 'testing' : 'running',
      connected,
      leader: this.maintenance.isLeader,
      schemaVerified: this.schemaVerified,
      shuttingDown: this.stopping,
      queues,
    };
  }
}
