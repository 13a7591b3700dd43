import type { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { handoffSql, sessionSql, type SqlParams } from '../sql/index.js';
import type { HandedOffRow } from '../sql/handoff.sql.js';
import { DedicatedConnection } from '../database/dedicated-connection.js';

/** The parameters of a handed enqueue's statement (handoffSql.insertHandedOff). */
type HandoffParams = SqlParams<typeof handoffSql.insertHandedOff>;

/**
 * The producer's own connection for the statement of an enqueue() that may hand its job to an idle
 * worker, in direct mode only (see DedicatedConnection): that enqueue is on the pickup's path, and
 * the pool's checkout is about 50 µs of it after an idle moment. Its commits stay synchronous: the
 * job is durable before its worker hears of it. The first such enqueue opens it (and goes through
 * the pool), so an instance that never enqueues a single job has none; while it is busy with another
 * enqueue, or reconnecting, an enqueue goes through the pool.
 */
export class HandoffConnection extends DedicatedConnection {
  constructor(db: AwaDatabase, options: ResolvedAwaOptions) {
    super(db, options, { applicationName: 'awa-handoffs', session: sessionSql.setLeaseSession });
  }

  /** The handed enqueue's statement on this connection, or undefined when it cannot now (use the pool). */
  insertHandedOff(params: HandoffParams): Promise<HandedOffRow[]> | undefined {
    return this.query(handoffSql.insertHandedOff, params);
  }
}
