import type { Logger } from '@nestjs/common';
import { AwaMessages } from '../awa.messages.js';
import type { AwaDatabase } from '../database/awa-database.js';
import type { ResolvedQueueOptions } from '../options/awa-options.resolved.js';
import { handoffSql } from '../sql/index.js';
import { SerialLane } from '../util/serial-lane.js';

/**
 * @internal A queue worker's offer for a handoff (queue option `handoff`, docs/handoff.md): while it
 * has a free slot and its last claim found nothing, an offer row says so, and enqueue() may take it
 * and insert its job already leased to this worker. At most one offer per worker: an enqueue that
 * takes it hands over one job, and the worker offers again once that job is its own. Offers and the
 * withdrawal go through one lane, so a withdrawal is never overtaken by an offer sent before it.
 */
export class WorkerOffer {
  /** Whether an offer is (or is being) stored and not known to be taken. */
  private offered = false;
  private withdrawn = false;
  private readonly lane = new SerialLane();

  constructor(
    private readonly db: AwaDatabase,
    private readonly options: ResolvedQueueOptions,
    private readonly kinds: readonly string[],
    private readonly instanceId: string,
    private readonly logger: Logger,
  ) {}

  get enabled(): boolean {
    return this.options.handoff && !this.withdrawn;
  }

  /** Offers this worker, unless an offer of it is stored already. Never throws: a failed offer only means claims. */
  offer(): void {
    if (!this.enabled || this.offered) return;
    this.offered = true;
    const { name, deadlineDuration } = this.options;
    void this.lane
      .run(() => this.db.query(handoffSql.offerWorker, [name, this.instanceId, [...this.kinds], deadlineDuration]))
      .catch((error: unknown) => {
        this.offered = false;
        this.logger.warn(AwaMessages.operationFailed('offering the worker for a handoff', String(error)));
      });
  }

  /** An enqueue took the offer (its job came). */
  taken(): void {
    this.offered = false;
  }

  /** Withdraws the offer for good (shutdown): no enqueue hands this worker a job after it returns. */
  async withdraw(): Promise<void> {
    if (!this.enabled) return;
    this.withdrawn = true;
    this.offered = false;
    try {
      await this.lane.run(() => this.db.query(handoffSql.withdrawOffer, [this.options.name, this.instanceId]));
    } catch (error) {
      // Not lost: a job handed after this reaches the stopping worker, which gives it back, or is rescued.
      this.logger.warn(AwaMessages.operationFailed('withdrawing the handoff offer', String(error)));
    }
  }
}
