import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * QueueAdmin's listings of the failure states (retryable, failed, cancelled), newest first (keyset on
 * id): the jobs an operator looks for and retries in bulk, usually few among many. Only those states
 * have entries, so the hot path pays nothing: an enqueue (available, scheduled), a claim (running) and
 * a completion add none; an index over every waiting job cost a bulk enqueue about 18%. Listings of
 * other states walk the primary key (where such jobs are dense) or the claim and due indexes (where
 * they are few), as the planner finds cheaper.
 */
export class AwaAdminIndexes1764600000005 implements MigrationInterface {
  name = 'AwaAdminIndexes1764600000005';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE INDEX jobs_admin_state_idx ON awa.jobs (state, id) WHERE state IN ('retryable', 'failed', 'cancelled')`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, ['DROP INDEX IF EXISTS awa.jobs_admin_state_idx']);
  }
}
