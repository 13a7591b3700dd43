import { Inject, Injectable, Logger } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { ScheduleMessages } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { SCHEDULE_TICK_BATCH, tickSchedules } from '../../schedules/schedule-fire.js';
import type { MaintenanceTask } from './maintenance-task.js';

export { SCHEDULE_TICK_BATCH };

/**
 * The leader's schedule tick, on its own cadence (scheduleInterval or scheduleCron): enqueues the
 * due fires of periodic jobs (see tickSchedules), and warns of missed fires left out. Exactly-once
 * does not rest on leadership: each fire's job has a unique key, so two overlapping leaders (or a
 * tick retried after a crash) insert it once.
 */
@Injectable()
export class ScheduleTickTask implements MaintenanceTask {
  readonly name = 'schedules';
  readonly batchSize = SCHEDULE_TICK_BATCH;
  private readonly logger = new Logger('AwaSchedules');

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  async run(): Promise<number> {
    const result = await tickSchedules(this.db, this.options, this.batchSize);
    for (const { name, missed } of result.skipped) this.logger.warn(ScheduleMessages.missedSkipped(name, missed));
    return result.schedules;
  }
}
