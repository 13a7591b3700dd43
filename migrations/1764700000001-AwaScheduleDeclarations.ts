import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * awa.schedules.concurrency_key: the key each fire's job carries (a schedule into a queue with
 * keyConcurrency needs one, or no claim takes its jobs). awa.instances.schedules: the names of the
 * schedules each live instance declares in code, so that a declared schedule is pruned only when no
 * live instance declares it any more (a rolling deploy runs old and new versions side by side).
 * Both nullable or with a constant default: adding them rewrites no row.
 */
export class AwaScheduleDeclarations1764700000001 implements MigrationInterface {
  name = 'AwaScheduleDeclarations1764700000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `ALTER TABLE awa.schedules ADD COLUMN concurrency_key text
         CHECK (concurrency_key IS NULL OR length(concurrency_key) BETWEEN 1 AND 200)`,
      `ALTER TABLE awa.instances ADD COLUMN schedules text[] NOT NULL DEFAULT '{}'`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'ALTER TABLE awa.instances DROP COLUMN IF EXISTS schedules',
      'ALTER TABLE awa.schedules DROP COLUMN IF EXISTS concurrency_key',
    ]);
  }
}
