import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { InstanceSession } from '../../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolver.js';
import { instancesSql, maintenanceSql } from '../../sql/index.js';
import { rescueParams, type MaintenanceTask } from './maintenance-task.js';

/**
 * Rescues the leases of dead instances: their liveness lock is gone (PostgreSQL dropped it with
 * their connection) or their row went stale. The leader never counts itself dead, and finding no
 * dead instance means checking nothing.
 */
@Injectable()
export class OrphanRescueTask implements MaintenanceTask {
  readonly name = 'orphan rescue';

  constructor(
    private readonly db: AwaDatabase,
    private readonly session: InstanceSession,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  async run(): Promise<number> {
    const dead = await this.db.query<{ id: string }>(instancesSql.findDeadInstances, [
      this.session.id, this.options.heartbeatStaleAfter, this.options.livenessProbe === 'session',
    ]);
    if (dead.length === 0) return 0;
    const ids = dead.map((d) => d.id);
    const rows = await this.db.query(maintenanceSql.rescueOrphanedLeases, [...rescueParams(this.options), ids]);
    await this.db.query(instancesSql.forgetDeadInstances, [ids]);
    return rows.length;
  }
}
