import { AdminMessages } from '../awa.messages.js';
import type { AwaDatabase } from '../database/awa-database.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import type { JobRecord } from '../interfaces/job.interface.js';
import { toRecord } from '../producer/queue-producer.js';
import { adminFilterSql, adminSql, jobsSql } from '../sql/index.js';
import { FIRST_CURSOR } from '../sql/admin.sql.js';
import { checkPlainObject, compileFilter, isJobId, type JobFilter } from './job-filter.js';
import { JOB_COUNT_CAP, JOB_PAGE_DEFAULT, PAGE_KEYS, checkPageLimit } from './queue-admin.limits.js';
import type { DeleteJobResult, JobPage, JobPageOptions, RetryJobResult } from './queue-admin.types.js';
import { SqlState, sqlStateOf } from '../database/sql-state.js';

// QueueAdmin's calls about jobs in one module's database: reading, listing and counting them, and
// retrying or deleting one. The service routes each call to its module first.

/** QueueAdmin.getJob: the job as stored, or null (also for a string that cannot be a job id). */
export async function readJob<T>(reads: AwaDatabase, id: string): Promise<JobRecord<T> | null> {
  if (!isJobId(id)) return null;
  const [row] = await reads.query(jobsSql.getJob, [id]);
  return row ? toRecord<T>(row) : null;
}

/** QueueAdmin.listJobs: one page of the jobs matching `filter`, newest first (a keyset by id). */
export async function listJobPage(reads: AwaDatabase, filter: JobFilter, page: JobPageOptions): Promise<JobPage> {
  const compiled = compileFilter(filter);
  const { after, limit = JOB_PAGE_DEFAULT } = checkPlainObject(page, 'page', PAGE_KEYS) as JobPageOptions;
  checkPageLimit(limit);
  if (after !== undefined && !isJobId(after))
    throw new AdminValidationError('page.after', AdminMessages.badId('page.after'));
  const cursor = after === undefined ? FIRST_CURSOR : String(BigInt(after) - 1n);
  const rows = await reads.query(adminFilterSql.listJobs(compiled), [limit + 1, cursor, ...compiled.values]);
  const jobs = rows.slice(0, limit).map((row) => toRecord(row));
  return { jobs, next: rows.length > limit ? jobs[jobs.length - 1]!.id : null };
}

/** QueueAdmin.countJobs: how many jobs match `filter`, counting no further than JOB_COUNT_CAP. */
export async function countMatching(reads: AwaDatabase, filter: JobFilter): Promise<number> {
  const compiled = compileFilter(filter);
  const [row] = await reads.query(adminFilterSql.countJobs(compiled), [JOB_COUNT_CAP, ...compiled.values]);
  return row?.count ?? 0;
}

/** QueueAdmin.retryJob: puts finished job `id` back to `available`; `wake` is told its queue. */
export async function retryOneJob(db: AwaDatabase, id: string, wake: (queue: string) => void): Promise<RetryJobResult> {
  if (!isJobId(id)) return { outcome: 'not-found' };
  for (let round = 0; ; round++) {
    try {
      const [row] = await db.query(adminSql.retryJob, [id]);
      if (!row) return { outcome: 'not-found' };
      if (row.queue === null) return { outcome: 'not-retryable', state: row.state };
      wake(row.queue);
      return { outcome: 'retried' };
    } catch (error) {
      // A retried unique job whose key another job holds.
      if (sqlStateOf(error) !== SqlState.uniqueViolation) throw error;
      const [holder] = await db.query(adminSql.uniqueHolder, [id]);
      // The holder may have finished in between: try again, a few times.
      if (holder || round >= 3) return { outcome: 'duplicate', existingId: holder?.id ?? '' };
    }
  }
}

/** QueueAdmin.deleteJob: deletes job `id` unless it is running. */
export async function deleteOneJob(db: AwaDatabase, id: string): Promise<DeleteJobResult> {
  if (!isJobId(id)) return { outcome: 'not-found' };
  const [row] = await db.query(adminSql.deleteJob, [id]);
  if (!row) return { outcome: 'not-found' };
  return row.deleted ? { outcome: 'deleted' } : { outcome: 'running' };
}
