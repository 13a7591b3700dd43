import { Injectable } from '@nestjs/common';
import { maintenanceSql } from '../../sql/index.js';
import { BatchDeleteTask } from './batch-delete.task.js';

/**
 * Deletes finished jobs past their retention that are still in awa.jobs, in batches (retention 0
 * keeps them): unique jobs whose final state holds their key. Every other finished job is in
 * awa.job_history, whose retention is HistoryRotationTask's.
 */
@Injectable()
export class CleanupTask extends BatchDeleteTask {
  readonly name = 'cleanup';

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
