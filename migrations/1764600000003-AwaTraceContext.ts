import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';

/**
 * awa.jobs.traceparent: the W3C trace context of the span active at enqueue (OpenTelemetry), which
 * the handler's consumer span continues. Nullable with no default: adding it rewrites no row, and a
 * job enqueued without tracing stores nothing.
 */
export class AwaTraceContext1764600000003 implements MigrationInterface {
  name = 'AwaTraceContext1764600000003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [`ALTER TABLE awa.jobs ADD COLUMN traceparent text`]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, ['ALTER TABLE awa.jobs DROP COLUMN IF EXISTS traceparent']);
  }
}
