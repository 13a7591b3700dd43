import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * Storage settings of the two tables every job passes through (docs/storage.md#the-hot-tables):
 * awa.jobs (insert, claim, delete on finishing) and awa.active_leases (insert, heartbeat, delete),
 * and of workflows' edges (awa.job_dependencies).
 * Both churn at the job rate while staying as small as the backlog, so autovacuum must keep up with
 * them rather than wait for a fifth of the table to die (the default scale factor) and then sleep
 * between pages (the default cost delay): it reclaims their dead rows at small fractions, unthrottled.
 * Free room on each page of awa.active_leases (fillfactor) keeps a heartbeat's new row version on its
 * page: heartbeats (a column no index covers) then stay heap-only updates.
 */
/** Each table's own settings. awa.jobs keeps full pages: its rows change state (indexed), never heap-only. */
const HOT_TABLES = {
  'awa.jobs': '',
  'awa.active_leases': 'fillfactor = 70, ',
  // Workflows' edges: a graph of thousands is inserted at once, and its completions find their edges
  // by index only once the statistics know the table's size.
  'awa.job_dependencies': '',
} as const;

const AUTOVACUUM =
  'autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02, ' +
  'autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 0';
const RESET =
  'fillfactor, autovacuum_vacuum_scale_factor, autovacuum_vacuum_insert_scale_factor, ' +
  'autovacuum_analyze_scale_factor, autovacuum_vacuum_cost_delay';

export class AwaHotTableStorage1765000000500 implements MigrationInterface {
  name = 'AwaHotTableStorage1765000000500';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(
      queryRunner,
      this.name,
      Object.entries(HOT_TABLES).map(([table, fill]) => `ALTER TABLE ${table} SET (${fill}${AUTOVACUUM})`),
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(
      queryRunner,
      this.name,
      Object.keys(HOT_TABLES).map((table) => `ALTER TABLE ${table} RESET (${RESET})`),
    );
  }
}
