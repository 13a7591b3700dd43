import type { Provider } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaDatabase } from '../database/awa-database.js';
import { InstanceSession } from '../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { LeaderElection } from './leader-election.js';
import { MAINTENANCE_LEADER, type MaintenanceLeader } from './maintenance-leader.js';
import { RowLeaseLeader } from './row-lease.leader.js';

/**
 * Provides the MaintenanceLeader of the configured connectionMode. Kept apart from the interface,
 * which both leaders import: in one file, they and it imported each other.
 */
export const maintenanceLeaderProvider: Provider = {
  provide: MAINTENANCE_LEADER,
  useFactory: (options: ResolvedAwaOptions, db: AwaDatabase, session: InstanceSession): MaintenanceLeader =>
    options.connectionMode === 'transaction-pooler'
      ? new RowLeaseLeader(db, session, options)
      : new LeaderElection(session, db),
  inject: [AWA_OPTIONS, AwaDatabase, InstanceSession],
};
