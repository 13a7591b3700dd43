import { QUEUE_DEFAULTS } from '../../options/awa-options.defaults.js';
import type { ResolvedAwaOptions } from '../../options/awa-options.resolved.js';
import type { RescueParams } from '../../sql/maintenance.sql.js';

/**
 * One unit of maintenance work, run by the leader. run() does one batch and returns how many rows
 * it moved; a sweep runs it again while it moves a full `batchSize`.
 */
export interface MaintenanceTask<Name extends string = string> {
  /** Its key in a sweep's report, and in log lines. */
  readonly name: Name;
  readonly batchSize: number;
  run(): Promise<number>;
}

/** $1..$6 of every rescue statement, from the leader's options. */
export function rescueParams(options: Pick<ResolvedAwaOptions, 'queues' | 'rescueBatchSize'>): RescueParams {
  const queues = [...options.queues.values()];
  return [
    queues.map((q) => q.name),
    queues.map((q) => q.retryBaseDelay),
    queues.map((q) => q.retryMaxDelay),
    QUEUE_DEFAULTS.retryBaseDelay,
    QUEUE_DEFAULTS.retryMaxDelay,
    options.rescueBatchSize,
  ];
}
