import { Injectable } from '@nestjs/common';
import { SchedulePruner } from '../../schedules/schedule-prune.js';
import type { MaintenanceTask } from './maintenance-task.js';

/**
 * The leader's prune of the schedules declared in code that no live instance declares any more
 * (see SchedulePruner), once per maintenance sweep, after the sweep's report: it is not in it.
 */
@Injectable()
export class SchedulePruneTask implements MaintenanceTask {
  readonly name = 'schedule prune';
  /** One statement per sweep: never repeated within a tick. */
  readonly batchSize = Number.POSITIVE_INFINITY;

  constructor(private readonly pruner: SchedulePruner) {}

  run(): Promise<number> {
    return this.pruner.prune();
  }
}
