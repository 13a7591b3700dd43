import { Injectable } from '@nestjs/common';
import { jobEventsSql } from '../../sql/index.js';
import { BatchDeleteTask } from './batch-delete.task.js';

/**
 * Retention of durable job events (docs/durable-events.md): deletes, in batches, the events older than
 * `jobEvents.retention` that every group has passed. An event a group has not acknowledged stays,
 * however old; a group removed from the code holds them until JobEventGroups.drop(). Retention 0 keeps
 * every event.
 */
@Injectable()
export class JobEventsCleanupTask extends BatchDeleteTask {
  readonly name = 'job events cleanup';

  async run(): Promise<number> {
    const { retention } = this.options.jobEvents;
    if (retention === 0) return 0;
    return this.db.execute(jobEventsSql.deleteExpiredEvents, [retention, this.batchSize]);
  }
}
