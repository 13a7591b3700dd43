import type { JobState } from '../interfaces/job.interface.js';
import { JOB_COLUMNS, type JobRow } from '../sql/jobs.sql.js';
import { statement } from '../sql/sql-statement.js';

/**
 * The test helpers' statements (AwaTesting, 'nestjs-awa/testing'). Test-only: they scan the jobs
 * of a queue, which a test database keeps small. They live here, not in the core's lib/sql/: the
 * optional part owns its SQL.
 */

/**
 * Makes the scheduled and retryable jobs of queue $1 with a kind in $2 due now, so the next claim
 * takes them (drain's withScheduled). Returns how many.
 */
export const makeWaitingJobsDue = statement<[queue: string, kinds: string[]], { id: string }>(
  'testing_make_waiting_jobs_due',
  `
  UPDATE awa.jobs SET run_at = now()
   WHERE state IN ('scheduled', 'retryable') AND run_at > now() AND queue = $1 AND kind = ANY($2::text[])
  RETURNING id::text`,
);

/**
 * Jobs in states $1, of kind $2 and queue $3 (null: any), whose args contain $4 (JSON containment,
 * null: any), oldest first, at most $5.
 */
export const findJobs = statement<
  [states: JobState[], kind: string | null, queue: string | null, args: string | null, limit: number],
  JobRow
>(
  'testing_find_jobs',
  `
  SELECT ${JOB_COLUMNS} FROM awa.all_jobs
   WHERE state = ANY($1::text[]) AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR queue = $3)
     AND ($4::jsonb IS NULL OR args @> $4::jsonb)
   ORDER BY id
   LIMIT $5`,
);
