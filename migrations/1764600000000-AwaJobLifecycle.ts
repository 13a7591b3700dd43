import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * The columns of the job lifecycle: tags for filtering, unique jobs (a key and the states in which
 * it blocks another job), snoozes, progress and output; and awa.queues for fleet-wide queue state
 * (pause). Every new column has a constant default or none, so adding it rewrites no row.
 */
export class AwaJobLifecycle1764600000000 implements MigrationInterface {
  name = 'AwaJobLifecycle1764600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `ALTER TABLE awa.jobs
        ADD COLUMN tags          text[]  NOT NULL DEFAULT '{}',
        ADD COLUMN unique_key    text,
        ADD COLUMN unique_states text[],
        ADD COLUMN snoozes       integer NOT NULL DEFAULT 0 CHECK (snoozes >= 0),
        ADD COLUMN progress      jsonb,
        ADD COLUMN output        jsonb`,
      // Uniqueness by construction, as River does it: a job blocks another with its key only while
      // its state is one of its unique_states. Jobs without a key are not in the index at all.
      `CREATE UNIQUE INDEX jobs_unique_idx ON awa.jobs (unique_key)
        WHERE unique_key IS NOT NULL AND state = ANY (unique_states)`,
      // Tag filters. Untagged jobs stay out of the index, so they cost nothing to insert.
      `CREATE INDEX jobs_tags_idx ON awa.jobs USING gin (tags) WHERE tags <> '{}'`,
      `CREATE TABLE awa.queues (
        name        text        PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
        paused_at   timestamptz,
        updated_at  timestamptz NOT NULL DEFAULT now()
      )`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'DROP TABLE IF EXISTS awa.queues',
      'DROP INDEX IF EXISTS awa.jobs_tags_idx',
      'DROP INDEX IF EXISTS awa.jobs_unique_idx',
      `ALTER TABLE awa.jobs DROP COLUMN IF EXISTS output, DROP COLUMN IF EXISTS progress,
        DROP COLUMN IF EXISTS snoozes, DROP COLUMN IF EXISTS unique_states, DROP COLUMN IF EXISTS unique_key,
        DROP COLUMN IF EXISTS tags`,
    ]);
  }
}
