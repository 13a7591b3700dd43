import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * QueueAdmin's listings by state, newest first (keyset on id). Completed jobs, usually most of the
 * table, are left out: a listing of them walks the primary key, where they are dense, and a job
 * that completes adds no entry here. Running jobs are left out too, so that the per-attempt writes
 * (`id = ANY(...) AND state = 'running'`) keep planning on the primary key, and a claim adds none.
 */
export class AwaAdminIndexes1764600000005 implements MigrationInterface {
  name = 'AwaAdminIndexes1764600000005';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE INDEX jobs_admin_state_idx ON awa.jobs (state, id) WHERE state NOT IN ('completed', 'running')`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, ['DROP INDEX IF EXISTS awa.jobs_admin_state_idx']);
  }
}
