import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * awa.leader: maintenance leadership as a row lease with a term, for connectionMode
 * 'transaction-pooler' (a session advisory lock cannot be held through a transaction-mode pooler).
 */
export class AwaLeaderLease1764500000004 implements MigrationInterface {
  name = 'AwaLeaderLease1764500000004';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE TABLE awa.leader (
        name        text        PRIMARY KEY,
        holder      text        NOT NULL,
        term        bigint      NOT NULL CHECK (term >= 1),
        expires_at  timestamptz NOT NULL
      )`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, ['DROP TABLE IF EXISTS awa.leader']);
  }
}
