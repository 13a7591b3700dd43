import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * What the maintenance leader needs to judge another instance's leases by that instance's own
 * options: its heartbeatStaleAfter and each queue's retry settings, written by every heartbeat.
 */
export class AwaInstanceSettings1764500000003 implements MigrationInterface {
  name = 'AwaInstanceSettings1764500000003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `ALTER TABLE awa.instances ADD COLUMN settings jsonb NOT NULL DEFAULT '{}'`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, ['ALTER TABLE awa.instances DROP COLUMN IF EXISTS settings']);
  }
}
