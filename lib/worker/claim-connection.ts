import type { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { claimSql, sessionSql, type SqlParams } from '../sql/index.js';
import type { ClaimedJobRow } from '../sql/claim.sql.js';
import { DedicatedConnection } from '../database/dedicated-connection.js';

/** The parameters of a plain claim (claimSql.claimJobs). */
type ClaimParams = SqlParams<typeof claimSql.claimJobs>;

/**
 * This instance's own connection for plain claims (no rate limit, no key concurrency), in direct
 * mode only (see DedicatedConnection): an idle worker's claim skips the pool's checkout and runs on
 * a connection whose statement is already prepared. Its commits are asynchronous (synchronous_commit
 * off, sessionSql.setClaimSession): the claim returns before its WAL flush, a fsync sooner. A claim
 * lost in a server crash is safe: its jobs are claimable again, and the next claim's run lease is
 * above the lost one (NEXT_RUN_LEASE), so the lost attempt's writes fail the fence. Any later
 * synchronous commit (a completion, a heartbeat) flushes it. A claim that finds it busy (another
 * queue's claim) goes through the pool.
 */
export class ClaimConnection extends DedicatedConnection {
  constructor(db: AwaDatabase, options: ResolvedAwaOptions) {
    // Not `awa:<id>`, the instance session's name, which tools and tests look for.
    super(db, options, { applicationName: 'awa-claims', session: sessionSql.setClaimSession });
  }

  /** Claims on the dedicated connection, or returns undefined when it cannot now (use the pool). */
  claim(params: ClaimParams): Promise<ClaimedJobRow[]> | undefined {
    return this.query(claimSql.claimJobs, params);
  }
}
