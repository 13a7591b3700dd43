import type { Provider } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { RescueErrors } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import { AwaEvents, type RescueReason } from '../../events/awa-events.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { maintenanceSql } from '../../sql/index.js';
import type { RescuedRow, RescueParams } from '../../sql/maintenance.sql.js';
import type { SqlStatement } from '../../sql/sql-statement.js';
import { rescueParams, type MaintenanceTask } from './maintenance-task.js';

/** What sets one rescue apart: its statement, the parameters it takes after RescueParams, its reason. */
export interface Rescue<Name extends string = string, P extends unknown[] = unknown[]> {
  /** Its provider's token. */
  readonly token: symbol;
  readonly name: Name;
  /** The reason of its `rescued` events. */
  readonly reason: RescueReason;
  readonly statement: SqlStatement<[...RescueParams, ...P], RescuedRow>;
  /** The statement's parameters from $7, from the leader's options. */
  params(options: ResolvedAwaOptions): P;
}

/** Leases whose heartbeat is older than heartbeatStaleAfter: the worker is presumed dead. */
export const HEARTBEAT_RESCUE: Rescue<'heartbeat rescue', [number, string]> = {
  token: Symbol('awa.heartbeat-rescue'),
  name: 'heartbeat rescue',
  reason: 'heartbeat',
  statement: maintenanceSql.rescueStaleHeartbeats,
  params: (options) => [options.heartbeatStaleAfter, RescueErrors.heartbeatStale],
};

/** Leases past their hard deadline: the handler hung, even if its worker still heartbeats. */
export const DEADLINE_RESCUE: Rescue<'deadline rescue', [string]> = {
  token: Symbol('awa.deadline-rescue'),
  name: 'deadline rescue',
  reason: 'deadline',
  statement: maintenanceSql.rescueExpiredDeadlines,
  params: () => [RescueErrors.deadlineExceeded],
};

/**
 * A rescue of leases by one statement (HEARTBEAT_RESCUE, DEADLINE_RESCUE): one batch of at most
 * rescueBatchSize leases per run, retried or failed with their queue's settings, announced as a
 * `rescued` event with the rescue's reason.
 */
export class RescueTask<Name extends string = string> implements MaintenanceTask<Name> {
  readonly name: Name;

  constructor(
    private readonly rescue: Rescue<Name>,
    private readonly db: AwaDatabase,
    private readonly options: ResolvedAwaOptions,
    private readonly events: AwaEvents,
  ) {
    this.name = rescue.name;
  }

  get batchSize(): number {
    return this.options.rescueBatchSize;
  }

  async run(): Promise<number> {
    const { statement, params, reason } = this.rescue;
    const rows = await this.db.query(statement, [...rescueParams(this.options), ...params(this.options)]);
    this.events.emit({ type: 'rescued', reason, jobs: rows });
    return rows.length;
  }
}

/** The provider of a rescue's task, under its token. */
export function rescueTaskProvider(rescue: Rescue): Provider {
  return {
    provide: rescue.token,
    useFactory: (db: AwaDatabase, options: ResolvedAwaOptions, events: AwaEvents) =>
      new RescueTask(rescue, db, options, events),
    inject: [AwaDatabase, AWA_OPTIONS, AwaEvents],
  };
}
