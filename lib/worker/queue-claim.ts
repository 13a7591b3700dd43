import type { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedQueueOptions } from '../options/awa-options.resolved.js';
import { claimSql, flowSql } from '../sql/index.js';
import { fromIndexStart, type ClaimedJobRow } from '../sql/claim.sql.js';
import type { ClaimConnection } from './claim-connection.js';
import type { ClaimCursor } from './claim-cursor.js';
import { rateEntryWait, rateLogExtension } from './prefetch-limits.js';

/** What a claim brought: the jobs, and how long until the next attempt may start (null: no wait). */
export interface ClaimResult {
  rows: ClaimedJobRow[];
  waitMs: number | null;
}

/** @internal Whether a queue claims through awa.claim_flow: it has a rate limit or key concurrency. */
export const hasFlowControl = (options: ResolvedQueueOptions): boolean =>
  options.rateLimit !== null || options.keyConcurrency > 0;

/**
 * @internal Claims up to `want` jobs of the queue: with the plain claim (unchanged, no flow cost) for
 * a queue without flow control, read from the worker's cursor (ClaimCursor; none: the whole index),
 * on the instance's claim connection when it is free (see ClaimConnection); else with the flow
 * claim, which also says when to claim again. `entryWait`: how long after this claim is sent its jobs
 * may still be entered (a rate-limited queue's, see RateEntryWait; default: the base wait).
 */
export async function claimBatch(
  db: AwaDatabase,
  options: ResolvedQueueOptions,
  kinds: string[],
  want: number,
  instanceId: string,
  claims?: ClaimConnection,
  cursor?: ClaimCursor,
  entryWait = rateEntryWait(options.rateLimit, options.deadlineDuration),
): Promise<ClaimResult> {
  if (!hasFlowControl(options)) {
    const params = [
      options.name,
      kinds,
      want,
      instanceId,
      options.deadlineDuration,
      ...(cursor?.next(kinds) ?? fromIndexStart(kinds)),
    ] as const;
    const sentAt = performance.now();
    const rows = await (claims?.claim([...params]) ?? db.query(claimSql.claimJobs, [...params]));
    cursor?.claimed(rows, performance.now() - sentAt);
    return { rows, waitMs: null };
  }
  const result = await db.query(flowSql.claimFlowJobs, [
    options.name,
    kinds,
    want,
    instanceId,
    options.deadlineDuration,
    options.rateLimit?.limit ?? 0,
    options.rateLimit?.period ?? 0,
    options.keyConcurrency,
    rateLogExtension(options.rateLimit ? entryWait : 0),
  ]);
  const rows: ClaimedJobRow[] = [];
  let waitMs: number | null = null;
  for (const row of result) {
    if (row.id === null) waitMs = row.wait_ms;
    else rows.push(row);
  }
  return { rows, waitMs };
}
