import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaDatabase } from '../../database/awa-database.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import type { MaintenanceTask } from './maintenance-task.js';

/**
 * What the cleanup tasks share: each run deletes up to `batchSize` rows (ten rescue batches) with a
 * statement of the task, and a sweep runs it again while it deletes a full batch.
 */
@Injectable()
export abstract class BatchDeleteTask implements MaintenanceTask {
  abstract readonly name: string;

  constructor(
    protected readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) protected readonly options: ResolvedAwaOptions,
  ) {}

  get batchSize(): number {
    return this.options.rescueBatchSize * 10;
  }

  abstract run(): Promise<number>;
}
