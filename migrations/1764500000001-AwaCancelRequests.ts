import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * Stored cancel requests and counted shutdown releases.
 * - active_leases.cancel_requested: producer.cancel() of a running job sets it on the attempt's
 *   lease (the row every transition of that attempt deletes, so each one sees it). A constant
 *   default: no table rewrite. No index covers it, so heartbeats stay HOT updates.
 * - jobs.shutdown_releases: shutdown releases since the job last spent an attempt; past a bound a
 *   release spends the attempt, so a handler that always outlives shutdownTimeout cannot loop.
 */
export class AwaCancelRequests1764500000001 implements MigrationInterface {
  name = 'AwaCancelRequests1764500000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `ALTER TABLE awa.active_leases ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false`,
      `ALTER TABLE awa.jobs ADD COLUMN shutdown_releases integer NOT NULL DEFAULT 0 CHECK (shutdown_releases >= 0)`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'ALTER TABLE awa.jobs DROP COLUMN IF EXISTS shutdown_releases',
      'ALTER TABLE awa.active_leases DROP COLUMN IF EXISTS cancel_requested',
    ]);
  }
}
