import { AdminMessages } from '../awa.messages.js';
import type { AwaDatabase } from '../database/awa-database.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import { flowKeysSql } from '../sql/index.js';
import { checkPlainObject, checkText } from './job-filter.js';
import {
  JOB_PAGE_DEFAULT,
  KEY_LIMIT_MAX,
  KEY_MAX,
  PAGE_KEYS,
  QUEUE_NAME_MAX,
  checkPageLimit,
} from './queue-admin.limits.js';
import type { KeyPage, KeyPageOptions } from './queue-admin.types.js';

// QueueAdmin's per-key concurrency limits in one module's database (awa.flow_keys).

/** QueueAdmin.setKeyConcurrency, less the wake of the queue's workers: checks, then stores the limit. */
export async function setKeyLimit(db: AwaDatabase, queue: string, key: string, limit: number | null): Promise<void> {
  checkText(queue, 'queue', QUEUE_NAME_MAX);
  checkText(key, 'key', KEY_MAX);
  if (limit !== null && (!Number.isInteger(limit) || limit < 0 || limit > KEY_LIMIT_MAX))
    throw new AdminValidationError('limit', AdminMessages.badKeyLimit(KEY_LIMIT_MAX));
  await db.query(flowKeysSql.setKeyLimit, [queue, key, limit]);
}

/** QueueAdmin.keyStates: one page of the keys of `queue` that have a row, by key. */
export async function readKeyPage(reads: AwaDatabase, queue: string, page: KeyPageOptions): Promise<KeyPage> {
  checkText(queue, 'queue', QUEUE_NAME_MAX);
  const { after, limit = JOB_PAGE_DEFAULT } = checkPlainObject(page, 'page', PAGE_KEYS) as KeyPageOptions;
  checkPageLimit(limit);
  if (after !== undefined) checkText(after, 'page.after', KEY_MAX);
  const rows = await reads.query(flowKeysSql.listFlowKeys, [queue, after ?? '', limit + 1]);
  const keys = rows.slice(0, limit).map((row) => ({
    key: row.key,
    running: row.running,
    waiting: row.has_waiting,
    limit: row.max_running,
    heldUntil: row.held_until,
    lastClaimedAt: row.last_claimed_at,
  }));
  return { keys, next: rows.length > limit ? keys[keys.length - 1]!.key : null };
}
