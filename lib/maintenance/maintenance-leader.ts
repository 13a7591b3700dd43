/**
 * Maintenance leadership, as MaintenanceService sees it. Direct connections use a session advisory
 * lock (LeaderElection); behind a transaction-mode pooler, a row lease with a term (RowLeaseLeader).
 * Its provider, which picks one, is in maintenance-leader.provider.ts.
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
