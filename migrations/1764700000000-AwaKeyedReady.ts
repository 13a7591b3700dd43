import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';
import { CLAIM_FLOW_FUNCTION_V1 } from './flow-claim-v1.function.js';
import { CLAIM_FLOW_FUNCTION_V2 } from './flow-claim-v2.function.js';

/**
 * Keyed queues: a key leaves the claim's ready set only when it has no available job at all. The
 * keyed claim (awa.claim_flow) took a key out when it found none of the jobs it could see, so a key
 * whose jobs were of a kind the claiming instance does not handle, or row-locked by another
 * transaction, was never served again (and its row was deleted by the cleanup sweep). The new claim
 * checks for such jobs first; the keys the old one stranded are marked waiting again here, their
 * rows re-created where the sweep deleted them.
 */
export class AwaKeyedReady1764700000000 implements MigrationInterface {
  name = 'AwaKeyedReady1764700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      CLAIM_FLOW_FUNCTION_V2,
      // In (queue, key) order, the order every statement locks key rows in.
      `INSERT INTO awa.flow_keys AS f (queue, key)
       SELECT DISTINCT j.queue, j.concurrency_key FROM awa.jobs j
        WHERE j.state = 'available' AND j.concurrency_key IS NOT NULL ORDER BY 1, 2
       ON CONFLICT (queue, key) DO UPDATE SET has_waiting = true WHERE NOT f.has_waiting`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      CLAIM_FLOW_FUNCTION_V1.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION'),
    ]);
  }
}
