import { Inject, Injectable, Logger } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaMessages } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { maintenanceSql } from '../../sql/index.js';
import type { UnhandledKindRow } from '../../sql/maintenance.sql.js';
import type { MaintenanceTask } from './maintenance-task.js';

/** Most (queue, kind) pairs named per sweep, so a flood of kinds cannot flood the log. */
export const MAX_UNHANDLED_KINDS = 50;

/**
 * A job of a kind that no live instance handles in its queue is never claimed (a misspelled kind,
 * a handler bound to another queue, an app not deployed yet). Once per maintenance sweep, the
 * leader names each such kind with its count of available jobs. It moves nothing.
 */
@Injectable()
export class UnhandledKindsTask implements MaintenanceTask {
  readonly name = 'unhandled kinds';
  /** One look per sweep: never repeated within a tick. */
  readonly batchSize = Number.POSITIVE_INFINITY;
  private readonly logger = new Logger('AwaMaintenance');

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  /** The (queue, kind) pairs with available jobs and no live handler. */
  async find(): Promise<UnhandledKindRow[]> {
    return this.db.query(maintenanceSql.findUnhandledKinds, [this.options.heartbeatStaleAfter, MAX_UNHANDLED_KINDS]);
  }

  async run(): Promise<number> {
    for (const { queue, kind, count } of await this.find())
      this.logger.warn(AwaMessages.unhandledKind(queue, kind, count));
    return 0;
  }
}
