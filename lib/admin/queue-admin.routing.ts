import { AdminMessages } from '../awa.messages.js';
import type { AwaModuleEntry, AwaRegistry } from '../awa.registry.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import type { JobFilter } from './job-filter.js';

/**
 * The other AwaModule a QueueAdmin call about `queues` goes to (AwaRegistry.handOff); a filter on
 * the queues of two modules is refused, naming them.
 */
export function adminHandOff(
  registry: AwaRegistry,
  self: string | undefined,
  queues: readonly unknown[],
): AwaModuleEntry | undefined {
  return registry.handOff(
    queues,
    self,
    (first, second) => new AdminValidationError('filter.queues', AdminMessages.filterSpansModules(first, second)),
  );
}

/** The queues of a filter, before compileFilter checks it (anything but a list: none). */
export function filterQueues(filter: JobFilter): readonly unknown[] {
  const queues: unknown = filter !== null && typeof filter === 'object' ? filter.queues : undefined;
  return Array.isArray(queues) ? queues : [];
}
