import { Logger } from '@nestjs/common';
import { MAINTENANCE_LEASE } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import type { InstanceSession } from '../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { leaderSql } from '../sql/index.js';
import type { MaintenanceLeader } from './maintenance-leader.js';

/**
 * How long a claim of the lease lasts: three ticks of the more frequent sweep. Every tick renews
 * it, so a live leader keeps it through two missed ticks; a dead one is replaced within this time
 * plus one tick.
 */
export function leaderLeaseDuration(
  options: Pick<ResolvedAwaOptions, 'orphanSweepInterval' | 'maintenanceInterval'>,
): number {
  return 3 * Math.min(options.orphanSweepInterval, options.maintenanceInterval);
}

/**
 * How long a claim of the lease waits for the leader row's lock (held FOR SHARE by the leader's
 * fenced transaction) before it gives up until the next tick: one tick of the more frequent sweep.
 */
export function leaderClaimLockTimeout(
  options: Pick<ResolvedAwaOptions, 'orphanSweepInterval' | 'maintenanceInterval'>,
): number {
  return leaderLeaseDuration(options) / 3;
}

/**
 * Maintenance leadership as a row lease (connectionMode 'transaction-pooler'): awa.leader holds the
 * holder, a term and expires_at on the database clock; every tick claims or renews it.
 *
 * The term fences the leader's writes: each task runs in a transaction whose first statement
 * locks the leader row FOR SHARE, where holder and term are ours and the lease has not expired.
 * A predicate on each statement was the other choice; it would put the leader table into every
 * maintenance statement. With the lock, a newer leader's takeover (which must lock the row for
 * update) waits until our transaction commits, so a deposed leader's writes either committed
 * before the takeover or never happen, and the tasks' SQL stays as it is.
 *
 * Every task runs on the fenced transaction's own connection (AwaDatabase.bound), so the leader
 * never holds the row while it waits for another connection from the pool. And a leader that
 * stalls mid-transaction anyway (a frozen process, a blocked event loop, a lost connection) cannot
 * keep the row locked for ever: its transaction carries idle_in_transaction_session_timeout of one
 * lease duration (and statementTimeout per statement), after which PostgreSQL ends it. A claim waits
 * at most leaderClaimLockTimeout for the row, then tries again at the next tick.
 */
export class RowLeaseLeader implements MaintenanceLeader {
  private term: string | undefined;
  /** Our clock's conservative end of the lease, for isLeader only; the fence asks the database. */
  private validUntil = 0;
  private readonly leaseMs: number;
  private readonly claimLockTimeout: number;
  private claiming: Promise<boolean> | undefined;
  private readonly logger = new Logger('AwaLeader');

  constructor(
    private readonly db: AwaDatabase,
    private readonly session: InstanceSession,
    options: ResolvedAwaOptions,
  ) {
    this.leaseMs = leaderLeaseDuration(options);
    this.claimLockTimeout = leaderClaimLockTimeout(options);
  }

  get isLeader(): boolean {
    return this.term !== undefined && Date.now() < this.validUntil;
  }

  /**
   * Both sweep timers ask; a second claim sent before the first one's answer would carry no term,
   * and so outbid the first with the next term. One claim at a time, shared.
   */
  ensureLeader(): Promise<boolean> {
    this.claiming ??= this.claim().finally(() => (this.claiming = undefined));
    return this.claiming;
  }

  private async claim(): Promise<boolean> {
    const sentAt = Date.now();
    try {
      const [row] = await this.db.transaction(
        (client) =>
          AwaDatabase.queryOn(client, leaderSql.claimLeadership, [
            MAINTENANCE_LEASE,
            this.session.id,
            this.term ?? null,
            this.leaseMs,
          ]),
        // It holds the row from the claim to its COMMIT: a claimant that stalls in between must not keep it.
        { lockTimeout: this.claimLockTimeout, idleTimeout: this.claimLockTimeout },
      );
      if (row) {
        if (row.term !== this.term) this.logger.log(AwaMessages.leaderAcquired(this.session.id));
        this.term = row.term;
        this.validUntil = sentAt + this.leaseMs;
      } else {
        this.deposed('another instance holds the lease');
      }
    } catch (error) {
      // Keep the term: the lease may still be ours, and the fence checks it before any write.
      this.logger.warn(AwaMessages.tickFailed('leader election', String(error)));
    }
    return this.isLeader;
  }

  async fenced<T>(work: () => Promise<T>): Promise<T | undefined> {
    const term = this.term;
    if (term === undefined) return undefined;
    return this.db.transaction(
      async (client) => {
        const [held] = await AwaDatabase.queryOn(client, leaderSql.fenceLeadership, [
          MAINTENANCE_LEASE,
          this.session.id,
          term,
        ]);
        if (!held) {
          if (this.term === term) this.deposed(`term ${term} is over`);
          return undefined;
        }
        return this.db.bound(client, work);
      },
      { idleTimeout: this.leaseMs },
    );
  }

  async resign(): Promise<void> {
    const term = this.term;
    this.term = undefined;
    this.validUntil = 0;
    if (term === undefined) return;
    await this.db.query(leaderSql.resignLeadership, [MAINTENANCE_LEASE, this.session.id, term]).catch(() => undefined);
  }

  private deposed(reason: string): void {
    if (this.term !== undefined) this.logger.warn(AwaMessages.leaderLost(this.session.id, reason));
    this.term = undefined;
    this.validUntil = 0;
  }
}
