import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * Periodic (cron) jobs: one row per schedule, with its next and last fire times. The maintenance
 * leader enqueues due fires; a partial index on next_fire_at keeps finding them one index scan.
 */
export class AwaSchedules1764600000001 implements MigrationInterface {
  name = 'AwaSchedules1764600000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `CREATE TABLE awa.schedules (
        name          text        PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 200),
        kind          text        NOT NULL CHECK (length(kind) BETWEEN 1 AND 200),
        queue         text        NOT NULL,
        args          jsonb       NOT NULL DEFAULT 'null',
        cron          text        NOT NULL,
        time_zone     text,
        missed        text        NOT NULL DEFAULT 'once' CHECK (missed IN ('skip', 'once', 'all')),
        paused        boolean     NOT NULL DEFAULT false,
        next_fire_at  timestamptz,
        last_fire_at  timestamptz,
        source        text        NOT NULL CHECK (source IN ('decorator', 'options', 'runtime')),
        created_at    timestamptz NOT NULL DEFAULT now(),
        updated_at    timestamptz NOT NULL DEFAULT now()
      )`,
      'CREATE INDEX schedules_due_idx ON awa.schedules (next_fire_at) WHERE NOT paused',
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, ['DROP TABLE IF EXISTS awa.schedules']);
  }
}
