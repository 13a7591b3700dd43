import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * Offers of idle workers for a handoff (queue option `handoff`, docs/handoff.md): enqueue() takes
 * one and inserts its job already leased to that worker. An offer goes with its instance: deleted
 * with the instance's row (at shutdown, or when maintenance forgets a dead instance).
 */
export class AwaWorkerOffers1765200000000 implements MigrationInterface {
  name = 'AwaWorkerOffers1765200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE TABLE awa.worker_offers (
        queue       text        NOT NULL,
        instance_id text        NOT NULL REFERENCES awa.instances (id) ON DELETE CASCADE,
        kinds       text[]      NOT NULL,
        deadline_ms integer     NOT NULL CHECK (deadline_ms >= 0),
        offered_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (queue, instance_id)
      )`,
      `CREATE INDEX worker_offers_instance_idx ON awa.worker_offers (instance_id)`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [`DROP TABLE awa.worker_offers`]);
  }
}
