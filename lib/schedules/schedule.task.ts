import { Inject, Injectable, Logger } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { ScheduleMessages } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import type { MaintenanceTask } from '../maintenance/tasks/maintenance-task.js';
import { QUEUE_DEFAULTS } from '../options/awa-options.defaults.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { runScheduleTick } from './schedule-tick.js';

/** Schedules one tick takes at most; a sweep repeats the tick while it comes back full. */
export const SCHEDULE_TICK_BATCH = 100;

/**
 * The leader's schedule tick: enqueues the due fires of periodic jobs (see runScheduleTick), in a
 * transaction of its own. Exactly-once does not rest on leadership: each fire's job has a unique
 * key, so two overlapping leaders (or a tick retried after a crash) insert it once.
 */
@Injectable()
export class ScheduleTask implements MaintenanceTask {
  readonly name = 'schedules';
  readonly batchSize = SCHEDULE_TICK_BATCH;
  private readonly logger = new Logger('AwaSchedules');

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  async run(): Promise<number> {
    const result = await this.db.transaction((client) =>
      runScheduleTick(
        (statement, values) => AwaDatabase.queryOn<unknown[], unknown>(client, statement, values) as Promise<never[]>,
        this.batchSize,
        (queue) => this.options.queues.get(queue)?.maxAttempts ?? QUEUE_DEFAULTS.maxAttempts,
      ),
    );
    for (const { name, missed } of result.skipped) this.logger.warn(ScheduleMessages.missedSkipped(name, missed));
    return result.schedules;
  }
}
