import type { Provider } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaDatabase } from '../database/awa-database.js';
import { InstanceSession } from '../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { LeaderElection } from './leader-election.js';
import { RowLeaseLeader } from './row-lease.leader.js';

/**
 * Maintenance leadership, as MaintenanceService sees it. Direct connections use a session advisory
 * lock (LeaderElection); behind a transaction-mode pooler, a row lease with a term (RowLeaseLeader).
 */
export interface MaintenanceLeader {
  /** Whether this instance believes it leads (the database has the last word, see fenced). */
  readonly isLeader: boolean;
  /** Takes or renews leadership; true while this instance leads. */
  ensureLeader(): Promise<boolean>;
  /**
   * Runs one task's writes under this leadership: resolves with its result, or undefined (having
   * written nothing) when the leadership turned out to be lost.
   */
  fenced<T>(work: () => Promise<T>): Promise<T | undefined>;
  resign(): Promise<void>;
}

/** Injection token of the MaintenanceLeader for the configured connectionMode. */
export const MAINTENANCE_LEADER = Symbol('MAINTENANCE_LEADER');

export const maintenanceLeaderProvider: Provider = {
  provide: MAINTENANCE_LEADER,
  useFactory: (options: ResolvedAwaOptions, db: AwaDatabase, session: InstanceSession): MaintenanceLeader =>
    options.connectionMode === 'transaction-pooler'
      ? new RowLeaseLeader(db, session, options)
      : new LeaderElection(session),
  inject: [AWA_OPTIONS, AwaDatabase, InstanceSession],
};
