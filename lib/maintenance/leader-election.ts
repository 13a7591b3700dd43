import { Injectable, Logger } from '@nestjs/common';
import { MAINTENANCE_LOCK_KEY } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import type { AwaDatabase } from '../database/awa-database.js';
import { InstanceSession } from '../instance/instance-session.js';
import { leaderSql } from '../sql/index.js';
import type { MaintenanceLeader } from './maintenance-leader.js';

/**
 * Maintenance leadership: a session-level advisory lock held on the instance session. PostgreSQL
 * grants it to one session at a time and drops it when that session ends, so a dead leader's
 * lock is free for the next instance that asks.
 */
@Injectable()
export class LeaderElection implements MaintenanceLeader {
  private leader = false;
  private readonly logger = new Logger('AwaLeader');

  constructor(
    private readonly session: InstanceSession,
    private readonly db: AwaDatabase,
  ) {
    this.session.onDisconnect(() => {
      if (this.leader) this.logger.warn(AwaMessages.leaderLost(this.session.id, 'session lost'));
      this.leader = false;
    });
  }

  get isLeader(): boolean {
    return this.leader && this.session.connected;
  }

  /** Takes the lock if it is free; true while this instance leads. */
  async ensureLeader(): Promise<boolean> {
    if (this.isLeader) return true;
    if (!this.session.connected) return false;
    try {
      const [row] = await this.session.query(leaderSql.tryMaintenanceLock, [MAINTENANCE_LOCK_KEY]);
      this.leader = row?.acquired === true;
      if (this.leader) this.logger.log(AwaMessages.leaderAcquired(this.session.id));
    } catch (error) {
      this.leader = false;
      this.logger.warn(AwaMessages.tickFailed('leader election', String(error)));
    }
    return this.leader;
  }

  /**
   * The lock is the fence: a leader that lost its session has lost it, and isLeader says so. Each
   * statement of the work runs in a transaction of its own, with JIT off (AwaDatabase.inOwnTransactions).
   */
  async fenced<T>(work: () => Promise<T>): Promise<T | undefined> {
    return this.isLeader ? this.db.inOwnTransactions(work) : undefined;
  }

  async resign(): Promise<void> {
    if (!this.isLeader) return;
    this.leader = false;
    await this.session.query(leaderSql.releaseMaintenanceLock, [MAINTENANCE_LOCK_KEY]).catch(() => undefined);
  }
}
