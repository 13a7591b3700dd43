import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * Claim indexes keyed by (queue, kind): a claim reads only the rows of the kinds it handles in its
 * queue, whatever other kinds and queues hold. And the kinds each instance handles, so the leader
 * can name the kinds that have jobs but no live handler.
 */
export class AwaClaimIndexes1764500000002 implements MigrationInterface {
  name = 'AwaClaimIndexes1764500000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      // Available jobs of one kind in one queue, in claim order. Replaces jobs_claim_idx (no kind).
      `CREATE INDEX jobs_claim_kind_idx ON awa.jobs (queue, kind, priority, run_at, id) WHERE state = 'available'`,
      // Due scheduled/retryable jobs of one kind in one queue. jobs_pending_idx stays for promotion,
      // which takes due jobs of every queue in run_at order.
      `CREATE INDEX jobs_due_kind_idx ON awa.jobs (queue, kind, run_at, id) WHERE state IN ('scheduled', 'retryable')`,
      `DROP INDEX awa.jobs_claim_idx`,
      // { kind: queue } of the handlers of an instance.
      `ALTER TABLE awa.instances ADD COLUMN handlers jsonb NOT NULL DEFAULT '{}'`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'ALTER TABLE awa.instances DROP COLUMN IF EXISTS handlers',
      `CREATE INDEX IF NOT EXISTS jobs_claim_idx ON awa.jobs (queue, priority, run_at, id) WHERE state = 'available'`,
      'DROP INDEX IF EXISTS awa.jobs_due_kind_idx',
      'DROP INDEX IF EXISTS awa.jobs_claim_kind_idx',
    ]);
  }
}
