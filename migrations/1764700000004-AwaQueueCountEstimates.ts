import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';
import { estimateJobsFunction } from './estimate-jobs.function.js';

/**
 * What the dashboard and QueueAdmin.queueStates read for the finished states once those are too
 * many to count on each refresh: the planner's estimate of the jobs of one queue in one state.
 * awa.estimate_jobs plans (never runs) that count (volatile: PostgreSQL allows EXPLAIN in no other); the
 * statistics object gives the planner the joint frequencies of (queue, state), so that a queue with
 * mostly failed jobs is not estimated with the table's mix. Both cost nothing on the hot path: ANALYZE
 * (autovacuum) maintains them. The statistics are on the expression `queue || ''`, which only the
 * estimate's own query names: on the plain columns they would also steer the claim's plan (queue =
 * $1 AND state = 'available'), which then read a backlog of kinds it cannot take (test/sql/explain).
 * Expression statistics need PostgreSQL 14.
 */
export class AwaQueueCountEstimates1764700000004 implements MigrationInterface {
  name = 'AwaQueueCountEstimates1764700000004';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE STATISTICS awa.jobs_queue_state_stats (mcv) ON (queue || ''), state FROM awa.jobs`,
      estimateJobsFunction('awa.jobs'),
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'DROP FUNCTION IF EXISTS awa.estimate_jobs(text, text)',
      'DROP STATISTICS IF EXISTS awa.jobs_queue_state_stats',
    ]);
  }
}
