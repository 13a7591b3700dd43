import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * Autovacuum no longer truncates awa.jobs and awa.active_leases (docs/storage.md#the-hot-tables).
 * Once a backlog drains, a vacuum may cut the empty pages off the end of a table, and to do so it
 * takes the table's ACCESS EXCLUSIVE lock. On these two tables every enqueue, claim and completion
 * then waits, and each truncation was followed by the soak's deepest stalls; the table grows again
 * within seconds at the job rate anyway. The pages stay with the table and are reused by the next
 * jobs; `VACUUM (TRUNCATE true)` gives them back by hand.
 */
const TABLES = ['awa.jobs', 'awa.active_leases'];

export class AwaHotTableKeepPages1765100000001 implements MigrationInterface {
  name = 'AwaHotTableKeepPages1765100000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(
      queryRunner,
      this.name,
      TABLES.map((table) => `ALTER TABLE ${table} SET (vacuum_truncate = false)`),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(
      queryRunner,
      this.name,
      TABLES.map((table) => `ALTER TABLE ${table} RESET (vacuum_truncate)`),
    );
  }
}
