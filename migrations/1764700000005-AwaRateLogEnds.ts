import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';
import { CLAIM_FLOW_FUNCTION_V2 } from './flow-claim-v2.function.js';
import { CLAIM_FLOW_FUNCTION_V3 } from './flow-claim-v3.function.js';

/**
 * Rate limits: the log of a rate-limited queue stores each claim's end (its stamp plus its own entry
 * wait), so the limit holds at handler entry even when instances pass different entry waits (their
 * deadlineDuration differs, e.g. during a rolling deploy). Entries written before this migration
 * hold their stamp and count as ending then: for at most one period after the upgrade, a window of
 * starts may hold up to one entry wait's worth more than the limit.
 */
export class AwaRateLogEnds1764700000005 implements MigrationInterface {
  name = 'AwaRateLogEnds1764700000005';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [CLAIM_FLOW_FUNCTION_V3]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [CLAIM_FLOW_FUNCTION_V2]);
  }
}
