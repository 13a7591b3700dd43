import type { MigrationInterface, QueryRunner } from 'typeorm';
import { applyOnce, revertOnce } from './awa-migration.helpers.js';
import { CLAIM_FLOW_FUNCTION_V3 } from './flow-claim-v3.function.js';
import { CLAIM_FLOW_FUNCTION_V4 } from './flow-claim-v4.function.js';

const CLAIM_FLOW_SIGNATURE = 'awa.claim_flow(text, text[], integer, text, float8, integer, float8, integer, float8)';

/**
 * Workflow telemetry (docs/telemetry.md). The flow claim returns each job's workflow_id, as the plain
 * claim does, for the consumer span's `awa.workflow.id` (its return type changes: v3 is dropped, v4
 * created). The finished workflow jobs by finalized_at, for the leader's count of ended workflows: plain
 * jobs stay out of the index, so they pay nothing for it.
 */
export class AwaClaimWorkflowId1765000000000 implements MigrationInterface {
  name = 'AwaClaimWorkflowId1765000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await applyOnce(queryRunner, this.name, [
      `DROP FUNCTION ${CLAIM_FLOW_SIGNATURE}`,
      CLAIM_FLOW_FUNCTION_V4,
      `CREATE INDEX job_history_workflow_finalized_idx ON awa.job_history (finalized_at)
         WHERE workflow_id IS NOT NULL`,
    ]);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await revertOnce(queryRunner, this.name, [
      'DROP INDEX IF EXISTS awa.job_history_workflow_finalized_idx',
      `DROP FUNCTION IF EXISTS ${CLAIM_FLOW_SIGNATURE}`,
      CLAIM_FLOW_FUNCTION_V3,
    ]);
  }
}
