import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/** The columns of awa.jobs after this migration, in table order: those of awa.all_jobs. */
const COLUMNS = `id, kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at, attempted_at,
  finalized_at, errors, run_lease, shutdown_releases, tags, unique_key, unique_states, snoozes, progress, output,
  concurrency_key, traceparent, workflow_id, waiting_on`;
/** awa.all_jobs before this migration (AwaJobHistory). */
const OLD_COLUMNS = COLUMNS.replace(', workflow_id, waiting_on', '');

const STATES = `'scheduled', 'available', 'running', 'retryable', 'completed', 'failed', 'cancelled'`;

/**
 * Workflows (docs/workflows.md): jobs that wait for other jobs. A job with unmet dependencies is
 * `waiting` (no claim reads that state) and counts them in `waiting_on`; each edge is a row of
 * awa.job_dependencies. The statement that ends a dependency resolves its edges (storing the
 * ending and output on the edge, so a dependent reads them whatever retention does to the job),
 * decrements its dependents' counts, and makes those at 0 available: see lib/sql/workflow.sql.ts.
 */
export class AwaWorkflows1764900000000 implements MigrationInterface {
  name = 'AwaWorkflows1764900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `ALTER TABLE awa.jobs DROP CONSTRAINT jobs_state_check,
         ADD CONSTRAINT jobs_state_check CHECK (state IN (${STATES}, 'waiting')),
         ADD COLUMN workflow_id uuid,
         ADD COLUMN waiting_on integer NOT NULL DEFAULT 0 CHECK (waiting_on >= 0)`,
      `ALTER TABLE awa.job_history ADD COLUMN workflow_id uuid, ADD COLUMN waiting_on integer NOT NULL DEFAULT 0`,
      // Plain jobs stay out of both: a job without a workflow adds no index entry.
      `CREATE INDEX jobs_workflow_idx ON awa.jobs (workflow_id) WHERE workflow_id IS NOT NULL`,
      // Counts of waiting jobs per queue (QueueAdmin, telemetry) read only them.
      `CREATE INDEX jobs_waiting_idx ON awa.jobs (queue) WHERE state = 'waiting'`,
      `CREATE INDEX job_history_workflow_idx ON awa.job_history (workflow_id) WHERE workflow_id IS NOT NULL`,
      `CREATE TABLE awa.job_dependencies (
        dependent_id  bigint      NOT NULL,
        dependency_id bigint      NOT NULL,
        workflow_id   uuid        NOT NULL,
        ref           text        NOT NULL CHECK (length(ref) BETWEEN 1 AND 200),
        policy        text        NOT NULL DEFAULT 'cancel' CHECK (policy IN ('cancel', 'fail', 'ignore')),
        state         text        CHECK (state IN ('completed', 'failed', 'cancelled', 'deleted')),
        output        jsonb,
        resolved_at   timestamptz,
        PRIMARY KEY (dependent_id, dependency_id)
      )`,
      // The ending of a dependency finds its edges by this index.
      `CREATE INDEX job_dependencies_dependency_idx ON awa.job_dependencies (dependency_id)`,
      `CREATE INDEX job_dependencies_workflow_idx ON awa.job_dependencies (workflow_id)`,
      // A job unblocked by another job's ending wakes its queue's workers, as an insert does.
      `CREATE FUNCTION awa.notify_jobs_unblocked() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        PERFORM pg_notify('awa_jobs', NEW.queue);
        RETURN NULL;
      END
      $fn$`,
      `CREATE TRIGGER jobs_notify_unblocked AFTER UPDATE OF state ON awa.jobs
        FOR EACH ROW WHEN (OLD.state = 'waiting' AND NEW.state = 'available')
        EXECUTE FUNCTION awa.notify_jobs_unblocked()`,
      'DROP VIEW awa.all_jobs',
      `CREATE VIEW awa.all_jobs AS
         SELECT ${COLUMNS} FROM awa.jobs UNION ALL SELECT ${COLUMNS} FROM awa.job_history`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'DROP VIEW IF EXISTS awa.all_jobs',
      `CREATE VIEW awa.all_jobs AS
         SELECT ${OLD_COLUMNS} FROM awa.jobs UNION ALL SELECT ${OLD_COLUMNS} FROM awa.job_history`,
      'DROP TRIGGER IF EXISTS jobs_notify_unblocked ON awa.jobs',
      'DROP FUNCTION IF EXISTS awa.notify_jobs_unblocked()',
      'DROP TABLE IF EXISTS awa.job_dependencies',
      // Waiting jobs cannot stay in a state the old schema does not know: they end cancelled.
      `UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE state = 'waiting'`,
      'ALTER TABLE awa.job_history DROP COLUMN IF EXISTS waiting_on, DROP COLUMN IF EXISTS workflow_id',
      `ALTER TABLE awa.jobs DROP COLUMN IF EXISTS waiting_on, DROP COLUMN IF EXISTS workflow_id,
         DROP CONSTRAINT jobs_state_check, ADD CONSTRAINT jobs_state_check CHECK (state IN (${STATES}))`,
    ]);
  }
}
