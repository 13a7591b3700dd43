import { AdminMessages } from '../awa.messages.js';
import type { AwaModuleEntry, AwaRegistry } from '../awa.registry.js';
import { AdminValidationError } from '../errors/admin-validation.error.js';
import { checkPlainObject, type JobFilter } from './job-filter.js';
import type { WorkflowLocation } from './workflow-admin.js';

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

/**
 * The module a workflow call names (`where.module`, checked; `field` names `where` in messages), or
 * undefined when it names none: the call then looks in every module's database.
 */
export function workflowModule(
  registry: AwaRegistry,
  where: WorkflowLocation,
  field: string,
): AwaModuleEntry | undefined {
  const { module } = checkPlainObject(where, field, ['module']) as WorkflowLocation;
  if (module === undefined) return undefined;
  const modules = registry.modules;
  const entry = modules.find((m) => m.name !== undefined && m.name === module);
  if (!entry)
    throw new AdminValidationError(
      `${field}.module`,
      AdminMessages.badModule(
        `${field}.module`,
        modules.flatMap((m) => (m.name === undefined ? [] : [m.name])),
      ),
    );
  return entry;
}
