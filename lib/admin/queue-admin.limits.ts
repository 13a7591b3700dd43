import { AdminMessages } from '../awa.messages.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';

// QueueAdmin's limits and the PostgreSQL error codes it handles, apart from the service.

/** Jobs each statement of retryJobs, cancelJobs and deleteJobs takes at most. */
export const BULK_BATCH_SIZE = 2_000;
/** countJobs counts no further than this. */
export const JOB_COUNT_CAP = 100_000;
/** listJobs page length: default and most. */
export const JOB_PAGE_DEFAULT = 50;
export const JOB_PAGE_MAX = 500;
/** The longest queue name awa.queues takes. */
export const QUEUE_NAME_MAX = 100;
/** The longest concurrencyKey (as enqueue takes it). */
export const KEY_MAX = 200;
/** The largest per-key limit awa.flow_keys stores (an integer column). */
export const KEY_LIMIT_MAX = 2_147_483_647;
export const PAGE_KEYS = ['after', 'limit'];

/** How many times a batch that hit a unique violation runs in all. */
export const BATCH_ROUNDS = 3;
/**
 * How many times a bulk batch that hit a deadlock runs in all. A bulk batch flags up to
 * BULK_BATCH_SIZE leases, which a worker's completion or heartbeat may hold some of, locked in its own
 * order: the batch that loses is one statement, rolled back whole, and is run again, unseen by the caller.
 */
export const BATCH_TRIES = 5;

/** A page length: an integer from 1 to JOB_PAGE_MAX. */
export function checkPageLimit(limit: unknown): void {
  if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > JOB_PAGE_MAX)
    throw new AdminValidationError('page.limit', AdminMessages.badLimit(JOB_PAGE_MAX));
}
