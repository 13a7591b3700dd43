import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * awa.active_leases keeps only its primary key (docs/storage.md#the-hot-tables). Every claimed job
 * inserts a lease row and every finished one deletes it, so the three secondary indexes cost three
 * B-tree entries per job (about 220 bytes of WAL, and their vacuuming), for scans the leader makes once a
 * maintenance tick. The table holds only the attempts in flight (instances × (concurrency +
 * prefetch)), so those scans (stale heartbeats, passed deadlines, dead instances) read it whole.
 */
const LEASE_INDEXES = [
  `CREATE INDEX active_leases_claimed_idx ON awa.active_leases (claimed_at)`,
  `CREATE INDEX active_leases_deadline_idx ON awa.active_leases (deadline_at) WHERE deadline_at IS NOT NULL`,
  `CREATE INDEX active_leases_instance_idx ON awa.active_leases (instance_id)`,
];

export class AwaLeaseTableScans1765100000000 implements MigrationInterface {
  name = 'AwaLeaseTableScans1765100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      'DROP INDEX IF EXISTS awa.active_leases_claimed_idx, awa.active_leases_deadline_idx, awa.active_leases_instance_idx',
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, LEASE_INDEXES);
  }
}
