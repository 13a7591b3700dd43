import { Injectable } from '@nestjs/common';
import { flowKeysSql } from '../../sql/index.js';
import { BatchDeleteTask } from './batch-delete.task.js';

/**
 * How long a key must have gone unserved before its row is deleted. A fixed hour, not a retention:
 * it only spares the churn of deleting and re-creating the row of a key that comes back between
 * bursts, and a re-created row ranks first in the claim's round-robin, where a key unserved for an
 * hour ranks already.
 */
export const FLOW_KEY_IDLE_MS = 3_600_000;

/**
 * Deletes the awa.flow_keys rows of idle keys (nothing running or waiting, no hold, no per-key
 * limit, unserved for FLOW_KEY_IDLE_MS), in batches: one row per key ever seen would otherwise stay.
 */
@Injectable()
export class FlowKeysCleanupTask extends BatchDeleteTask {
  readonly name = 'flow keys cleanup';

  run(): Promise<number> {
    return this.db.execute(flowKeysSql.deleteIdleFlowKeys, [FLOW_KEY_IDLE_MS, this.batchSize]);
  }
}
