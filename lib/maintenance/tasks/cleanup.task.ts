import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaDatabase } from '../../database/awa-database.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { maintenanceSql } from '../../sql/index.js';
import type { MaintenanceTask } from './maintenance-task.js';

/**
 * Deletes finished jobs past their retention that are still in awa.jobs, in batches (retention 0
 * keeps them): unique jobs whose final state holds their key. Every other finished job is in
 * awa.job_history, whose retention is HistoryRotationTask's.
 */
@Injectable()
export class CleanupTask implements MaintenanceTask {
  readonly name = 'cleanup';

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  get batchSize(): number {
    return this.options.rescueBatchSize * 10;
  }

  async run(): Promise<number> {
    const { completed, failed } = this.options.retention;
    if (completed === 0 && failed === 0) return 0;
    return this.db.execute(maintenanceSql.deleteFinishedJobs, [
      completed === 0 ? null : completed,
      failed === 0 ? null : failed,
      this.batchSize,
    ]);
  }
}
