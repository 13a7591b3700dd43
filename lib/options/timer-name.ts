import type { ResolvedAwaOptions } from './awa-options.resolved.js';

/**
 * The name of a module's timer in the host's SchedulerRegistry, which every AwaModule of the app
 * shares: the default module's keeps its plain name, a named module's is suffixed with `:<name>`.
 */
export function timerName(options: Pick<ResolvedAwaOptions, 'name'>, base: string): string {
  return options.name === undefined ? base : `${base}:${options.name}`;
}
