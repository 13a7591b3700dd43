import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { InstanceSession, MAX_RECONNECT_DELAY_MS } from '../../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolver.js';
import { instancesSql, maintenanceSql } from '../../sql/index.js';
import { rescueParams, type MaintenanceTask } from './maintenance-task.js';

/**
 * After PostgreSQL restarts, every instance's session reconnects within MAX_RECONNECT_DELAY_MS; a
 * leader that has itself just reconnected waits that long, plus a margin, before it trusts the
 * absence of someone's liveness lock. A leader whose session was not lost sweeps at once.
 */
export const ORPHAN_SWEEP_GRACE_MS = 2 * MAX_RECONNECT_DELAY_MS + 1_000;

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

  get batchSize(): number {
    return this.options.rescueBatchSize;
  }

  async run(): Promise<number> {
    if (this.options.livenessProbe === 'session' && this.session.reconnectedWithin(ORPHAN_SWEEP_GRACE_MS)) return 0;
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
