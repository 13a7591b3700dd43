import { Inject, Injectable, Logger } from '@nestjs/common';
import { AWA_OPTIONS } from '../../awa.constants.js';
import { AwaMessages } from '../../awa.messages.js';
import { AwaDatabase } from '../../database/awa-database.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import { historySql, sessionSql } from '../../sql/index.js';
import type { HistoryClass } from '../../sql/job-history.sql.js';
import { pruneEdges } from '../../sql/workflow.sql.js';
import type { MaintenanceTask } from './maintenance-task.js';
import { SqlState, sqlStateOf } from '../../database/sql-state.js';

/** A ring moves on after retention / WIDTH_DIVISOR: 8 segments cover retention + 2 widths. */
export const WIDTH_DIVISOR = 6;
/**
 * How long the TRUNCATE waits for readers of the segment before this tick gives up on it: above the
 * server's deadlock_timeout (1 s by default), after which PostgreSQL cancels an autovacuum that holds
 * the lock. At 500 ms, an autovacuum of a big segment outlasted every try, and the ring stopped moving.
 */
export const ROTATION_LOCK_TIMEOUT_MS = 2_000;
/** A ring held this many ticks in a row is warned of, and again every HELD_WARN_EVERY ticks it stays held. */
export const HELD_WARN_AFTER = 3;
const HELD_WARN_EVERY = 20;
/** Workflow edges pruned per statement after a rotation, and the most statements per sweep. */
export const EDGE_PRUNE_BATCH = 5_000;
const EDGE_PRUNE_ROUNDS = 20;

/**
 * Retention of finished jobs as ring rotation (docs/storage.md): each class of awa.job_history
 * (completed; failed and cancelled) writes into one segment of its ring of 8. Once the current one
 * was written for a width (retention / 6, at least 1 ms), the ring moves to the next segment, which
 * it first empties with TRUNCATE: only if that segment was sealed at least retention + width ago, so
 * a job stays readable for at least its retention and at most retention + 2 widths (plus a
 * maintenance interval). Retention 0 never rotates. The TRUNCATE waits at most
 * ROTATION_LOCK_TIMEOUT_MS for readers of the segment; past that, this tick skips the ring and the
 * next one tries again (a ring skipped HELD_WARN_AFTER ticks in a row is warned of). Returns the rings rotated.
 */
@Injectable()
export class HistoryRotationTask implements MaintenanceTask {
  readonly name = 'history rotation';
  /** Never reached (2 rings): one pass per sweep. */
  readonly batchSize = 3;
  private readonly logger = new Logger('AwaMaintenance');
  /** Ticks in a row that a reader held each ring's next segment (0 once a tick gets through). */
  private readonly held: Record<HistoryClass, number> = { completed: 0, failed: 0 };

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  async run(): Promise<number> {
    const { completed, failed } = this.options.retention;
    let rotated = 0;
    if (completed > 0 && (await this.rotate('completed', completed))) rotated++;
    if (failed > 0 && (await this.rotate('failed', failed))) rotated++;
    // A rotation dropped jobs: the workflow edges of the dependents it dropped go too (docs/workflows.md).
    for (let round = 0; rotated > 0 && round < EDGE_PRUNE_ROUNDS; round++) {
      const [row] = await this.db.query(pruneEdges, [EDGE_PRUNE_BATCH]);
      if ((row?.pruned ?? 0) < EDGE_PRUNE_BATCH) break;
    }
    return rotated;
  }

  /** Moves ring `cls` on if it is due and its next segment expired; false if not (or a reader held it). */
  private async rotate(cls: HistoryClass, retentionMs: number): Promise<boolean> {
    const widthMs = Math.max(1, Math.floor(retentionMs / WIDTH_DIVISOR));
    try {
      const rotated = await this.db.transaction(async (client) => {
        // Set here, not as a transaction limit: inside the leader's fenced transaction this is a savepoint.
        await AwaDatabase.queryOn(client, sessionSql.setLocalLimits, [null, String(ROTATION_LOCK_TIMEOUT_MS), null]);
        const [due] = await AwaDatabase.queryOn(client, historySql.dueRotation, [cls, widthMs, retentionMs]);
        if (!due) return false;
        await AwaDatabase.queryOn(client, historySql.truncateSegment[due.next]!);
        await AwaDatabase.queryOn(client, historySql.rotateRing, [cls, due.next, due.current]);
        return true;
      });
      this.held[cls] = 0;
      return rotated;
    } catch (error) {
      if (sqlStateOf(error) !== SqlState.lockNotAvailable) throw error;
      await this.heldAgain(cls);
      return false;
    }
  }

  /** A ring that stays held keeps its jobs past their retention: say so, with the server's deadlock_timeout. */
  private async heldAgain(cls: HistoryClass): Promise<void> {
    const ticks = ++this.held[cls];
    if (ticks < HELD_WARN_AFTER || (ticks - HELD_WARN_AFTER) % HELD_WARN_EVERY !== 0) return;
    const [row] = await this.db.query(sessionSql.deadlockTimeout);
    this.logger.warn(AwaMessages.historyRotationHeld(cls, ticks, ROTATION_LOCK_TIMEOUT_MS, row?.ms));
  }
}
