import { Inject, Injectable, Logger } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaExplorer } from '../awa.explorer.js';
import { ScheduleMessages } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import { InstanceSession } from '../instance/instance-session.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { schedulesSql } from '../sql/index.js';
import { declaredScheduleNames } from './schedule-definition.js';

/**
 * Removes the schedules declared in code that no live instance declares any more (see
 * pruneDeclaredSchedules): at boot (JobSchedules) and once per maintenance sweep by the leader
 * (SchedulePruneTask), so a schedule dropped from the code goes once the last instance of the
 * version that declared it is gone, and never while one lives (a rolling deploy, or two services
 * that share handlers).
 */
@Injectable()
export class SchedulePruner {
  private readonly logger = new Logger('AwaSchedules');

  constructor(
    private readonly db: AwaDatabase,
    private readonly explorer: AwaExplorer,
    private readonly session: InstanceSession,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  /** pruneDeclaredSchedules' parameters for this instance: its id, what it declares and the kinds it handles. */
  params(): [string, string[], string[], number] {
    return [
      this.session.id,
      declaredScheduleNames(this.explorer.periodic, this.options.schedules),
      [...this.explorer.handlers.keys()],
      this.options.heartbeatStaleAfter,
    ];
  }

  /** Logs what a prune removed; returns how many. */
  report(removed: ReadonlyArray<{ name: string }>): number {
    if (removed.length > 0) this.logger.log(ScheduleMessages.pruned(removed.map((r) => r.name)));
    return removed.length;
  }

  /** One prune, in a statement of its own; returns how many schedules it removed. */
  async prune(): Promise<number> {
    return this.report(await this.db.query(schedulesSql.pruneDeclaredSchedules, this.params()));
  }
}
