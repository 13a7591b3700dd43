import { Inject, Injectable, Logger } from '@nestjs/common';
import type { SchedulerRegistry } from '@nestjs/schedule';
import { AWA_OPTIONS, AWA_SCHEDULER } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolver.js';
import { MAINTENANCE_LEADER, type MaintenanceLeader } from './maintenance-leader.js';
import { CleanupTask } from './tasks/cleanup.task.js';
import { DeadlineRescueTask } from './tasks/deadline-rescue.task.js';
import { HeartbeatRescueTask } from './tasks/heartbeat-rescue.task.js';
import type { MaintenanceTask } from './tasks/maintenance-task.js';
import { OrphanRescueTask } from './tasks/orphan-rescue.task.js';
import { PromotionTask } from './tasks/promotion.task.js';

export const MAINTENANCE_INTERVAL_NAME = 'awa.maintenance';
export const ORPHAN_SWEEP_INTERVAL_NAME = 'awa.orphan-sweep';

/** Rows moved by each task in one sweep, by task name. */
export type SweepReport = Record<string, number>;

/**
 * Leader-guarded maintenance on @nestjs/schedule. Every maintenanceInterval the leader rescues
 * stale heartbeats and expired deadlines, promotes due jobs and deletes expired finished jobs;
 * every orphanSweepInterval it rescues the leases of dead instances. Every instance asks for
 * leadership on each tick, so a new leader takes over within one orphan-sweep interval.
 */
@Injectable()
export class MaintenanceService {
  private readonly logger = new Logger('AwaMaintenance');
  private readonly sweepTasks: MaintenanceTask[];
  private readonly inProgress = new Map<string, Promise<unknown>>();
  private stopped = true;
  private confirmTimer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(MAINTENANCE_LEADER) private readonly election: MaintenanceLeader,
    @Inject(AWA_SCHEDULER) private readonly scheduler: SchedulerRegistry,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    heartbeatRescue: HeartbeatRescueTask,
    deadlineRescue: DeadlineRescueTask,
    private readonly orphanRescue: OrphanRescueTask,
    promotion: PromotionTask,
    cleanup: CleanupTask,
  ) {
    this.sweepTasks = [heartbeatRescue, deadlineRescue, promotion, cleanup];
  }

  /** Whether this instance holds the maintenance lease. */
  get isLeader(): boolean {
    return this.election.isLeader;
  }

  start(): void {
    this.stopped = false;
    this.scheduler.addInterval(MAINTENANCE_INTERVAL_NAME,
      setInterval(() => void this.guarded(MAINTENANCE_INTERVAL_NAME, () => this.sweep()), this.options.maintenanceInterval));
    this.scheduler.addInterval(ORPHAN_SWEEP_INTERVAL_NAME,
      setInterval(() => void this.guarded(ORPHAN_SWEEP_INTERVAL_NAME, () => this.sweepOrphans()), this.options.orphanSweepInterval));
    void this.guarded(MAINTENANCE_INTERVAL_NAME, () => this.sweep());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.confirmTimer);
    for (const name of [MAINTENANCE_INTERVAL_NAME, ORPHAN_SWEEP_INTERVAL_NAME]) {
      if (this.scheduler.doesExist('interval', name)) this.scheduler.deleteInterval(name);
    }
    await Promise.allSettled([...this.inProgress.values()]);
    await this.election.resign();
  }

  /** One maintenance sweep now, if this instance is (or becomes) the leader. */
  async sweep(): Promise<SweepReport | undefined> {
    if (!(await this.election.ensureLeader())) return undefined;
    const report: SweepReport = {};
    for (const task of this.sweepTasks) report[task.name] = await this.runTask(task);
    return report;
  }

  /** One orphan sweep now, if this instance is (or becomes) the leader. */
  async sweepOrphans(): Promise<number | undefined> {
    if (!(await this.election.ensureLeader())) return undefined;
    const moved = await this.runTask(this.orphanRescue);
    this.scheduleOrphanConfirmation();
    return moved;
  }

  /** A missing lock is confirmed by a second look; take it when due rather than at the next tick. */
  private scheduleOrphanConfirmation(): void {
    const due = this.orphanRescue.confirmDueIn();
    if (due === undefined || due >= this.options.orphanSweepInterval || this.stopped || this.confirmTimer) return;
    this.confirmTimer = setTimeout(() => {
      this.confirmTimer = undefined;
      void this.guarded(ORPHAN_SWEEP_INTERVAL_NAME, () => this.sweepOrphans());
    }, due + 10);
    this.confirmTimer.unref();
  }

  private async runTask(task: MaintenanceTask): Promise<number> {
    try {
      const moved = (await this.election.fenced(() => task.run())) ?? 0; // 0: deposed, nothing written
      if (moved > 0) this.logger.log(AwaMessages.rescued(task.name, moved));
      return moved;
    } catch (error) {
      this.logger.warn(AwaMessages.tickFailed(task.name, String(error)));
      return 0;
    }
  }

  /** Ticks of one kind never overlap, and none starts after stop(). */
  private async guarded(name: string, body: () => Promise<unknown>): Promise<void> {
    if (this.stopped || this.inProgress.has(name)) return;
    const run = body()
      .catch((error) => this.logger.warn(AwaMessages.tickFailed(name, String(error))))
      .finally(() => this.inProgress.delete(name));
    this.inProgress.set(name, run);
    await run;
  }
}
