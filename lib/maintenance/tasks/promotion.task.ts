import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaDatabase } from '../../database/awa-database.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { maintenanceSql } from '../../sql/index.js';
import type { MaintenanceTask } from './maintenance-task.js';

/**
 * Makes due scheduled and retryable jobs `available` and wakes their queues. Workers already claim
 * due jobs directly; this keeps `state` truthful for jobs no running instance has a handler for.
 */
@Injectable()
export class PromotionTask implements MaintenanceTask {
  readonly name = 'promotion';

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  get batchSize(): number {
    return this.options.rescueBatchSize;
  }

  async run(): Promise<number> {
    const [row] = await this.db.query(maintenanceSql.promoteDueJobs, [this.options.rescueBatchSize]);
    return row?.promoted ?? 0;
  }
}
