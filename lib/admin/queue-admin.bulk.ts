import { RescueErrors } from '../awa.messages.js';
import type { AwaDatabase } from '../database/awa-database.js';
import { SqlState, sqlStateOf } from '../database/sql-state.js';
import { adminBatchSql } from '../sql/index.js';
import type { BatchRow } from '../sql/admin-batch.sql.js';
import { FIRST_CURSOR } from '../sql/admin.sql.js';
import type { SqlStatement } from '../sql/sql-statement.js';
import type { CompiledFilter } from './job-filter.js';
import { BATCH_ROUNDS, BATCH_TRIES, BULK_BATCH_SIZE } from './queue-admin.limits.js';
import type { BulkDeleteResult, BulkResult } from './queue-admin.types.js';

// QueueAdmin's bulk calls in one module's database: retry, cancel or delete every job matching a
// filter, in batches of BULK_BATCH_SIZE, each its own short transaction.

/** QueueAdmin.retryJobs: retries the finished jobs matching `filter`; `wake` is told each queue retried into. */
export async function retryMatching(
  db: AwaDatabase,
  filter: CompiledFilter,
  wake: (queue: string) => void,
): Promise<BulkResult> {
  let count = 0;
  const batches = await inBatches(db, filter, adminBatchSql.retryBatch, [], (row) => {
    count += row.changed;
    row.queues.forEach((queue) => wake(queue));
  });
  return { count, batches };
}

/** QueueAdmin.cancelJobs (and cancelWorkflow): cancels the waiting jobs matching `filter`, signals the running ones. */
export async function cancelMatching(db: AwaDatabase, filter: CompiledFilter): Promise<BulkResult> {
  let count = 0;
  const batches = await inBatches(db, filter, adminBatchSql.cancelBatch, [RescueErrors.cancelled], (row) => {
    count += row.cancelled + row.signalled;
  });
  return { count, batches };
}

/** QueueAdmin.deleteJobs: deletes the jobs matching `filter` that are not running; running ones get a cancel request. */
export async function deleteMatching(db: AwaDatabase, filter: CompiledFilter): Promise<BulkDeleteResult> {
  let deleted = 0;
  let cancelled = 0;
  const batches = await inBatches(db, filter, adminBatchSql.deleteBatch, [], (row) => {
    deleted += row.deleted;
    cancelled += row.signalled;
  });
  return { deleted, cancelled, batches };
}

/**
 * Runs a batch statement from the newest matching job down, until a batch takes fewer than
 * BULK_BATCH_SIZE jobs. Returns how many statements ran.
 */
async function inBatches<R extends BatchRow>(
  db: AwaDatabase,
  filter: CompiledFilter,
  build: (filter: CompiledFilter) => SqlStatement<unknown[], R>,
  own: unknown[],
  each: (row: R) => Promise<void> | void,
): Promise<number> {
  const sql = build(filter);
  let cursor = FIRST_CURSOR;
  for (let batches = 1; ; batches++) {
    const [row] = await runBatch(db, sql, [cursor, BULK_BATCH_SIZE, ...own, ...filter.values]);
    if (row) await each(row);
    if (!row || row.picked < BULK_BATCH_SIZE || row.last_id === null) return batches;
    cursor = String(BigInt(row.last_id) - 1n);
  }
}

/**
 * One batch statement, rolled back whole and run again when it lost a deadlock (up to
 * BATCH_TRIES runs), or when a retry batch met a unique job of a key
 * committed since its snapshot (a unique violation, up to BATCH_ROUNDS runs): run again, it sees
 * that job and skips the key.
 */
async function runBatch<R>(db: AwaDatabase, sql: SqlStatement<unknown[], R>, values: unknown[]): Promise<R[]> {
  for (let deadlocks = 0, violations = 0; ;) {
    try {
      return await db.query(sql, values);
    } catch (error) {
      const code = sqlStateOf(error);
      if (code === SqlState.deadlockDetected && ++deadlocks < BATCH_TRIES) continue;
      if (code === SqlState.uniqueViolation && ++violations < BATCH_ROUNDS) continue;
      throw error;
    }
  }
}
