import type { Client } from 'pg';
import { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { handoffSql, sessionSql, type SqlParams } from '../sql/index.js';
import type { HandedOffRow } from '../sql/handoff.sql.js';
import { DedicatedConnection } from '../database/dedicated-connection.js';

/** The parameters of a handed enqueue's statement (handoffSql.insertHandedOff). */
type HandoffParams = SqlParams<typeof handoffSql.insertHandedOff>;

/**
 * The producer's own connection for the statement of an enqueue() that may hand its job to an idle
 * worker, in direct mode only (see DedicatedConnection): that enqueue is on the pickup's path, and
 * the pool's checkout is about 50 µs of it after an idle moment. The first such enqueue opens it
 * (and goes through the pool), so an instance that never enqueues a single job has none; while it is
 * busy with another enqueue, or reconnecting, an enqueue goes through the pool.
 *
 * For a queue with `handoff: 'eager'`, where the app's pg has pipeline mode, a handed job's insert
 * commits without waiting for the write-ahead log's flush, so the worker hears of it at once, and the
 * flush statement sent right behind it (one round trip) makes it durable before enqueue() returns
 * (docs/handoff.md). Else, and through the pool, the insert's own commit is durable before its
 * worker hears of the job.
 */
export class HandoffConnection extends DedicatedConnection {
  constructor(db: AwaDatabase, options: ResolvedAwaOptions) {
    super(db, options, {
      applicationName: 'awa-handoffs',
      session: sessionSql.setLeaseSession,
      pipeline: [...options.queues.values()].some((queue) => queue.handoff === 'eager'),
    });
  }

  /**
   * The handed enqueue's statements on this connection (`eager`: its queue's handoff is 'eager'), or
   * undefined when it cannot now (use the pool).
   */
  insertHandedOff(params: HandoffParams, eager: boolean): Promise<HandedOffRow[]> | undefined {
    return this.use(handoffSql.insertHandedOff.name, (client) =>
      eager && pipelined(client)
        ? insertThenFlush(client, params)
        : AwaDatabase.queryOn(client, handoffSql.insertHandedOff, params),
    );
  }
}

const pipelined = (client: Client): boolean => (client as Client & { pipeline?: boolean }).pipeline === true;

/**
 * Both statements sent at once, in this order (each its own transaction): the insert, then the
 * flush. Settles once both have answered, with the insert's rows; an error of either fails the
 * enqueue (a failed flush leaves a handed job's durability unknown, as a lost commit's answer would).
 */
async function insertThenFlush(client: Client, params: HandoffParams): Promise<HandedOffRow[]> {
  const inserted = AwaDatabase.queryOn(client, handoffSql.insertHandedOffFlushedLater, params);
  const flushed = AwaDatabase.queryOn(client, handoffSql.flushHandedOff);
  const [rows, flush] = await Promise.allSettled([inserted, flushed]);
  if (rows.status === 'rejected') throw rows.reason;
  if (flush.status === 'rejected') throw flush.reason;
  return rows.value;
}
