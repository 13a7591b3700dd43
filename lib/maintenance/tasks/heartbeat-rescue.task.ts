import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { RescueErrors } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { AwaEvents } from '../../events/awa-events.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { maintenanceSql } from '../../sql/index.js';
import { rescueParams, type MaintenanceTask } from './maintenance-task.js';

/** Rescues leases whose heartbeat is older than heartbeatStaleAfter: the worker is presumed dead. */
@Injectable()
export class HeartbeatRescueTask implements MaintenanceTask {
  readonly name = 'heartbeat rescue';

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly events: AwaEvents,
  ) {}

  get batchSize(): number {
    return this.options.rescueBatchSize;
  }

  async run(): Promise<number> {
    const rows = await this.db.query(maintenanceSql.rescueStaleHeartbeats, [
      ...rescueParams(this.options),
      this.options.heartbeatStaleAfter,
      RescueErrors.heartbeatStale,
    ]);
    this.events.emit({ type: 'rescued', reason: 'heartbeat', jobs: rows });
    return rows.length;
  }
}
