import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { RescueErrors } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { AwaEvents } from '../../events/awa-events.js';
import { InstanceSession, MAX_RECONNECT_DELAY_MS } from '../../instance/instance-session.js';
import { livenessTiming } from '../../instance/liveness-timing.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { instancesSql, maintenanceSql } from '../../sql/index.js';
import { rescueParams, type MaintenanceTask } from './maintenance-task.js';

/**
 * After PostgreSQL restarts, every instance's session reconnects within MAX_RECONNECT_DELAY_MS; a
 * leader that has itself just reconnected waits that long, plus a margin, before it trusts the
 * absence of someone's liveness lock. A leader whose session was not lost sweeps at once.
 */
export const ORPHAN_SWEEP_GRACE_MS = 2 * MAX_RECONNECT_DELAY_MS + 1_000;

/** When an instance's lock was first and last seen missing (this leader's clock). */
interface Suspect {
  since: number;
  last: number;
}

/**
 * Rescues the leases of dead instances. Dead takes two signals: a stale row, or a liveness lock
 * seen missing on a sweep and still missing on a later one at least `confirmAfter` after (time
 * for a live instance that lost only its session to notice, reconnect and take its lock back).
 * The leader never counts itself dead, and finding no dead instance means checking nothing.
 */
@Injectable()
export class OrphanRescueTask implements MaintenanceTask {
  readonly name = 'orphan rescue';
  private suspects = new Map<string, Suspect>();
  private readonly confirmAfter: number;

  constructor(
    private readonly db: AwaDatabase,
    private readonly session: InstanceSession,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly events: AwaEvents,
  ) {
    this.confirmAfter = livenessTiming(options.orphanSweepInterval).confirmAfter;
  }

  get batchSize(): number {
    return this.options.rescueBatchSize;
  }

  async run(): Promise<number> {
    if (this.options.livenessProbe === 'session' && this.session.reconnectedWithin(ORPHAN_SWEEP_GRACE_MS)) {
      this.suspects.clear();
      return 0;
    }
    const found = await this.db.query(instancesSql.findDeadInstances, [
      this.session.id,
      this.options.heartbeatStaleAfter,
      this.options.livenessProbe === 'session',
    ]);
    const ids = this.confirm(found);
    if (ids.length === 0) return 0;
    const rows = await this.db.query(maintenanceSql.rescueOrphanedLeases, [
      ...rescueParams(this.options),
      ids,
      RescueErrors.instanceDiedPrefix,
    ]);
    await this.db.query(instancesSql.forgetDeadInstances, [ids]);
    this.events.emit({ type: 'rescued', reason: 'orphan', jobs: rows });
    return rows.length;
  }

  /** In how many ms a suspect can be confirmed, if there is one (the leader then sweeps again early). */
  confirmDueIn(): number | undefined {
    if (this.suspects.size === 0) return undefined;
    const since = Math.min(...[...this.suspects.values()].map((s) => s.since));
    return Math.max(0, since + this.confirmAfter - Date.now());
  }

  /** The dead among `found`; the rest become (or stay) suspects. Anyone not found is forgotten. */
  private confirm(found: Array<{ id: string; stale: boolean }>): string[] {
    const now = Date.now();
    // A gap this long between sightings means sweeps were missed (leadership moved away and back).
    const maxGap = this.confirmAfter + 2 * this.options.orphanSweepInterval;
    const dead: string[] = [];
    const suspects = new Map<string, Suspect>();
    for (const { id, stale } of found) {
      const seen = this.suspects.get(id);
      const since = seen && now - seen.last <= maxGap ? seen.since : now;
      if (stale || now - since >= this.confirmAfter) dead.push(id);
      else suspects.set(id, { since, last: now });
    }
    this.suspects = suspects;
    return dead;
  }
}
