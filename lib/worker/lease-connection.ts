import type { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { sessionSql } from '../sql/index.js';
import { DedicatedConnection } from '../database/dedicated-connection.js';

/**
 * This instance's own connection for the LeaseWriter's batched writes (completions, failures,
 * releases, snoozes, progress, deadline moves), in direct mode only (see DedicatedConnection). Its
 * session has JIT off (sessionSql.setLeaseSession), which the app's pooled sessions may not: a
 * completion priced past jit_above_cost by a lull's statistics compiled for 200 ms at each execution
 * (docs/storage.md#jit). And the writes never wait for a pool the handlers keep busy. The lane runs
 * one write at a time, so it is free for each; when it is not connected, the pool takes the write.
 */
export class LeaseConnection extends DedicatedConnection {
  constructor(db: AwaDatabase, options: ResolvedAwaOptions) {
    super(db, options, { applicationName: 'awa-leases', session: sessionSql.setLeaseSession });
  }
}
