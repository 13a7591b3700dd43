import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaDatabase } from '../../database/awa-database.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { jobEventsSql } from '../../sql/index.js';
import type { MaintenanceTask } from './maintenance-task.js';

/**
 * Retention of durable job events (docs/durable-events.md): deletes, in batches, the events older than
 * `jobEvents.retention` that every group has passed. An event a group has not acknowledged stays,
 * however old; a group removed from the code holds them until JobEventGroups.drop(). Retention 0 keeps
 * every event.
 */
@Injectable()
export class JobEventsCleanupTask implements MaintenanceTask {
  readonly name = 'job events cleanup';

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  get batchSize(): number {
    return this.options.rescueBatchSize * 10;
  }

  async run(): Promise<number> {
    const { retention } = this.options.jobEvents;
    if (retention === 0) return 0;
    return this.db.execute(jobEventsSql.deleteExpiredEvents, [retention, this.batchSize]);
  }
}
