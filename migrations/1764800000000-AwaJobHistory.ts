import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';
import { estimateJobsFunction } from './estimate-jobs.function.js';

/** The columns of awa.jobs when this migration ran, in table order: those of awa.job_history and awa.all_jobs. */
const COLUMNS = `id, kind, queue, args, state, priority, attempt, max_attempts, run_at, created_at, attempted_at,
  finalized_at, errors, run_lease, shutdown_releases, tags, unique_key, unique_states, snoozes, progress, output,
  concurrency_key, traceparent`;

/** Segments 0..7 hold completed jobs, 8..15 failed and cancelled ones. */
const SEGMENTS = Array.from({ length: 16 }, (_, segment) => segment);
const classOf = (segment: number) => (segment < 8 ? `state = 'completed'` : `state IN ('failed', 'cancelled')`);

/** A finished job that stays in awa.jobs: its final state is one of its unique_states, so it holds its key. */
const UNIQUE_HELD = `(unique_key IS NOT NULL AND coalesce(state = ANY (unique_states), false))`;

/**
 * Finished jobs leave awa.jobs (the table claims, heartbeats and the dashboard's counts read): each
 * statement that finishes a job moves it into awa.job_history, partitioned by LIST (segment) over a
 * fixed ring of 16 partitions made here once (no DDL at run time: CREATE ... PARTITION OF needs an
 * ACCESS EXCLUSIVE lock on the parent). Retention truncates the oldest segment of a class
 * (HistoryRotationTask) instead of deleting rows. A finished unique job that still holds its key stays
 * in awa.jobs, where jobs_unique_idx sees it. awa.all_jobs reads both tables. Each partition checks the
 * states of its class, so a query on constant states skips the other class's partitions.
 */
export class AwaJobHistory1764800000000 implements MigrationInterface {
  name = 'AwaJobHistory1764800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE TABLE awa.job_history (LIKE awa.jobs, segment smallint NOT NULL) PARTITION BY LIST (segment)`,
      ...SEGMENTS.map(
        (s) =>
          `CREATE TABLE awa.job_history_${s} PARTITION OF awa.job_history
             (CONSTRAINT job_history_${s}_class CHECK (${classOf(s)})) FOR VALUES IN (${s})`,
      ),
      // awa.estimate_jobs' statistics (see AwaQueueCountEstimates), per partition: the planner reads a
      // partition's own when it plans a query of the view.
      ...SEGMENTS.map(
        (s) =>
          `CREATE STATISTICS awa.job_history_${s}_queue_state_stats (mcv) ON (queue || ''), state FROM awa.job_history_${s}`,
      ),
      // Few indexes, each costs every finishing insert: id (getJob, keyset listings, retry, delete),
      // finalized_at (throughput, finalized filters). Both grow in insert order.
      `CREATE INDEX job_history_id_idx ON awa.job_history (id)`,
      `CREATE INDEX job_history_finalized_idx ON awa.job_history (finalized_at)`,
      // The failed and cancelled jobs one state at a time (admin listings, the dashboard's samples), as
      // jobs_admin_state_idx does in awa.jobs: a completion adds no entry.
      `CREATE INDEX job_history_state_idx ON awa.job_history (state, id) WHERE state IN ('failed', 'cancelled')`,
      // Tag filters, as jobs_tags_idx: untagged jobs stay out of it.
      `CREATE INDEX job_history_tags_idx ON awa.job_history USING gin (tags) WHERE tags <> '{}'`,
      `CREATE TABLE awa.history_rings (
        class      text        PRIMARY KEY CHECK (class IN ('completed', 'failed')),
        segment    smallint    NOT NULL,
        rotated_at timestamptz NOT NULL DEFAULT now()
      )`,
      `INSERT INTO awa.history_rings (class, segment) VALUES ('completed', 0), ('failed', 8)`,
      `CREATE TABLE awa.history_segments (
        segment   smallint PRIMARY KEY,
        sealed_at timestamptz
      )`,
      `INSERT INTO awa.history_segments (segment) SELECT generate_series(0, 15)`,
      `CREATE VIEW awa.all_jobs AS
         SELECT ${COLUMNS} FROM awa.jobs UNION ALL SELECT ${COLUMNS} FROM awa.job_history`,
      `WITH moved AS (
         DELETE FROM awa.jobs WHERE state IN ('completed', 'failed', 'cancelled') AND NOT ${UNIQUE_HELD}
         RETURNING *
       )
       INSERT INTO awa.job_history SELECT m.*, CASE WHEN m.state = 'completed' THEN 0 ELSE 8 END FROM moved m`,
      // Estimates of the finished states now come from both tables (the partitions of the other class
      // are excluded by their CHECK).
      estimateJobsFunction('awa.all_jobs'),
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      estimateJobsFunction('awa.jobs'),
      `INSERT INTO awa.jobs (${COLUMNS}) SELECT ${COLUMNS} FROM awa.job_history`,
      'DROP VIEW IF EXISTS awa.all_jobs',
      'DROP TABLE IF EXISTS awa.history_segments',
      'DROP TABLE IF EXISTS awa.history_rings',
      'DROP TABLE IF EXISTS awa.job_history',
    ]);
  }
}
