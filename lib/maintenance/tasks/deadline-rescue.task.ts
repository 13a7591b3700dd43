import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { RescueErrors } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { AwaEvents } from '../../events/awa-events.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { maintenanceSql } from '../../sql/index.js';
import { rescueParams, type MaintenanceTask } from './maintenance-task.js';

/** Rescues leases past their hard deadline: the handler hung, even if its worker still heartbeats. */
@Injectable()
export class DeadlineRescueTask implements MaintenanceTask {
  readonly name = 'deadline rescue';

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly events: AwaEvents,
  ) {}

  get batchSize(): number {
    return this.options.rescueBatchSize;
  }

  async run(): Promise<number> {
    const rows = await this.db.query(maintenanceSql.rescueExpiredDeadlines, [
      ...rescueParams(this.options),
      RescueErrors.deadlineExceeded,
    ]);
    this.events.emit({ type: 'rescued', reason: 'deadline', jobs: rows });
    return rows.length;
  }
}
