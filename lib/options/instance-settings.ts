import type { ResolvedAwaOptions } from './awa-options.resolved.js';

/**
 * The options another instance's leader needs to rescue this instance's leases as this instance
 * would judge them: stored on its `awa.instances` row (column `settings`, read by the rescues).
 */
export interface InstanceSettings {
  heartbeatStaleAfter: number;
  queues: Record<string, { retryBaseDelay: number; retryMaxDelay: number }>;
}

export function instanceSettings(options: ResolvedAwaOptions): InstanceSettings {
  const queues: InstanceSettings['queues'] = {};
  for (const q of options.queues.values())
    queues[q.name] = { retryBaseDelay: q.retryBaseDelay, retryMaxDelay: q.retryMaxDelay };
  return { heartbeatStaleAfter: options.heartbeatStaleAfter, queues };
}
