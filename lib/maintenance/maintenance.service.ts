import { Inject, Injectable, Logger } from '@nestjs/common';
import type { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { AWA_OPTIONS, AWA_SCHEDULER } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { timerName } from '../options/timer-name.js';
import { MAINTENANCE_LEADER, type MaintenanceLeader } from './maintenance-leader.js';
import { CleanupTask } from './tasks/cleanup.task.js';
import { FlowKeysCleanupTask } from './tasks/flow-keys-cleanup.task.js';
import { HistoryRotationTask } from './tasks/history-rotation.task.js';
import { HotTableVacuumTask } from './tasks/hot-table-vacuum.task.js';
import { JobEventsCleanupTask } from './tasks/job-events-cleanup.task.js';
import type { MaintenanceTask } from './tasks/maintenance-task.js';
import { OrphanRescueTask } from './tasks/orphan-rescue.task.js';
import { PlannerStatisticsTask } from './tasks/planner-statistics.task.js';
import { PromotionTask } from './tasks/promotion.task.js';
import { DEADLINE_RESCUE, HEARTBEAT_RESCUE, type RescueTask } from './tasks/rescue.task.js';
import { SchedulePruneTask } from './tasks/schedule-prune.task.js';
import { ScheduleTickTask } from './tasks/schedule-tick.task.js';
import { UnhandledKindsTask } from './tasks/unhandled-kinds.task.js';
import { runSweep, type SweepReport, type SweepTaskName } from './sweep-runner.js';

export const MAINTENANCE_INTERVAL_NAME = 'awa.maintenance';
export const ORPHAN_SWEEP_INTERVAL_NAME = 'awa.orphan-sweep';
export const SCHEDULE_TICK_NAME = 'awa.schedules';

export type { SweepReport } from './sweep-runner.js';

/**
 * Leader-guarded maintenance on @nestjs/schedule. Every maintenanceInterval the leader rescues
 * stale heartbeats and expired deadlines, promotes due jobs, deletes expired finished jobs and the
 * rows of idle flow-control keys and the durable job events past their retention;
 * every orphanSweepInterval it rescues the leases of dead instances, vacuums the hot tables that
 * gained many dead rows since (HotTableVacuumTask) and analyzes those whose planner statistics are far
 * off their size (PlannerStatisticsTask); every scheduleInterval it
 * enqueues the due fires of periodic jobs. Each tick may be a cron instead (maintenanceCron, ...),
 * registered as a CronJob. Every instance asks for leadership on each tick, so a new leader takes
 * over within one orphan-sweep interval.
 */
@Injectable()
export class MaintenanceService {
  private readonly logger = new Logger('AwaMaintenance');
  private readonly sweepTasks: MaintenanceTask<SweepTaskName>[];
  private readonly inProgress = new Map<string, Promise<unknown>>();
  private stopped = true;
  private confirmTimer: NodeJS.Timeout | undefined;
  /** Set while stop() waits: a sweep in progress ends after its current batch. */
  private stopping = false;

  /** @internal The module builds it; its parameters are the queue's internals. */
  constructor(
    @Inject(MAINTENANCE_LEADER) private readonly election: MaintenanceLeader,
    @Inject(AWA_SCHEDULER) private readonly scheduler: SchedulerRegistry,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    @Inject(HEARTBEAT_RESCUE.token) heartbeatRescue: RescueTask<'heartbeat rescue'>,
    @Inject(DEADLINE_RESCUE.token) deadlineRescue: RescueTask<'deadline rescue'>,
    private readonly orphanRescue: OrphanRescueTask,
    promotion: PromotionTask,
    cleanup: CleanupTask,
    flowKeysCleanup: FlowKeysCleanupTask,
    private readonly unhandledKinds: UnhandledKindsTask,
    private readonly schedules: ScheduleTickTask,
    private readonly schedulePrune: SchedulePruneTask,
    historyRotation: HistoryRotationTask,
    jobEventsCleanup: JobEventsCleanupTask,
    private readonly plannerStatistics: PlannerStatisticsTask,
    private readonly hotTableVacuum: HotTableVacuumTask,
  ) {
    this.sweepTasks = [heartbeatRescue, deadlineRescue, promotion, cleanup, historyRotation, flowKeysCleanup];
    this.sweepTasks.push(jobEventsCleanup);
  }

  /** Whether this instance leads maintenance (holds the leader lock, or the leader row lease behind a pooler). */
  get isLeader(): boolean {
    return this.election.isLeader;
  }

  /** @internal The lifecycle (AwaLifecycle) starts and stops maintenance, in order with the rest. */
  start(): void {
    this.stopped = false;
    const { maintenanceInterval, maintenanceCron, orphanSweepInterval, orphanSweepCron } = this.options;
    this.addTick(MAINTENANCE_INTERVAL_NAME, maintenanceInterval, maintenanceCron, () => this.sweep());
    this.addTick(ORPHAN_SWEEP_INTERVAL_NAME, orphanSweepInterval, orphanSweepCron, () => this.sweepOrphans());
    const { scheduleInterval, scheduleCron } = this.options;
    this.addTick(SCHEDULE_TICK_NAME, scheduleInterval, scheduleCron, () => this.enqueueSchedules());
    void this.guarded(MAINTENANCE_INTERVAL_NAME, () => this.sweep());
  }

  /** A tick in the SchedulerRegistry: a CronJob when `cron` is set, else an interval of `ms`. */
  private addTick(name: string, ms: number, cron: string | undefined, body: () => Promise<unknown>): void {
    const tick = () => void this.guarded(name, body);
    const key = timerName(this.options, name);
    if (cron === undefined) return this.scheduler.addInterval(key, setInterval(tick, ms));
    const job = CronJob.from({ cronTime: cron, onTick: tick, start: false });
    this.scheduler.addCronJob(key, job as never);
    job.start();
  }

  /** @internal */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.confirmTimer);
    this.stopping = true;
    for (const base of [MAINTENANCE_INTERVAL_NAME, ORPHAN_SWEEP_INTERVAL_NAME, SCHEDULE_TICK_NAME]) {
      const name = timerName(this.options, base);
      if (this.scheduler.doesExist('interval', name)) this.scheduler.deleteInterval(name);
      if (this.scheduler.doesExist('cron', name)) this.scheduler.deleteCronJob(name);
    }
    try {
      await Promise.allSettled([...this.inProgress.values()]);
    } finally {
      this.stopping = false;
    }
    await this.election.resign();
  }

  /**
   * One maintenance sweep now, if this instance is (or becomes) the leader. Each task repeats its
   * batch until one comes back short, for up to half the maintenance interval. Then the leader
   * warns of kinds that have available jobs and no live handler (it moves nothing: not reported),
   * and removes the schedules declared in code that no live instance declares any more.
   */
  async sweep(): Promise<SweepReport | undefined> {
    if (!(await this.election.ensureLeader())) return undefined;
    const report = await this.runTasks(this.sweepTasks, this.options.maintenanceInterval / 2);
    if (!this.stopping) await this.runBatch(this.unhandledKinds);
    if (!this.stopping) await this.runBatch(this.schedulePrune);
    return report;
  }

  /**
   * One orphan sweep now, if this instance is (or becomes) the leader; batches as sweep() does. Then
   * the hot tables' vacuum and planner statistics, outside the fence: a VACUUM cannot run in a
   * transaction, and neither it nor an ANALYZE changes a job or waits for a lock long. The vacuum
   * first: it updates the planner's row counts too.
   */
  async sweepOrphans(): Promise<number | undefined> {
    if (!(await this.election.ensureLeader())) return undefined;
    const report = await this.runTasks([this.orphanRescue], this.options.orphanSweepInterval / 2);
    this.scheduleOrphanConfirmation();
    for (const task of [this.hotTableVacuum, this.plannerStatistics])
      if (!this.stopping) await task.run().catch((error) => this.warnFailed(task, error));
    return report[this.orphanRescue.name];
  }

  /** One schedule tick now, if this instance is (or becomes) the leader: the due fires of periodic jobs. */
  async enqueueSchedules(): Promise<number | undefined> {
    if (!(await this.election.ensureLeader())) return undefined;
    const report = await runSweep([this.schedules], (task) => this.runBatch(task), {
      budgetMs: this.options.scheduleInterval / 2,
      keepGoing: () => !this.stopping && this.election.isLeader,
    });
    return report[this.schedules.name];
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

  private async runTasks<Name extends string>(
    tasks: MaintenanceTask<Name>[],
    budgetMs: number,
  ): Promise<Record<Name, number>> {
    const report = await runSweep(tasks, (task) => this.runBatch(task), {
      budgetMs,
      keepGoing: () => !this.stopping && this.election.isLeader,
    });
    for (const [name, moved] of Object.entries<number>(report))
      if (moved > 0) this.logger.log(AwaMessages.swept(name, moved));
    return report;
  }

  private async runBatch(task: MaintenanceTask): Promise<number> {
    try {
      return (await this.election.fenced(() => task.run())) ?? 0; // 0: deposed, nothing written
    } catch (error) {
      return this.warnFailed(task, error);
    }
  }

  private warnFailed(task: MaintenanceTask, error: unknown): number {
    this.logger.warn(AwaMessages.tickFailed(task.name, String(error)));
    return 0;
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
