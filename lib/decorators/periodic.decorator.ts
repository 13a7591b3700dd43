import type { ScheduleMissed } from '../sql/schedules.sql.js';

/** Metadata key set by @Periodic on a method (a list: a method may carry several). */
export const PERIODIC_METADATA = 'awa:periodic';

export interface PeriodicOptions<TArgs = unknown> {
  /** Name of the schedule. Default: the kind of the method's @JobHandler (give one per @Periodic if several). */
  name?: string;
  /** IANA time zone the expression is read in (e.g. 'Europe/Berlin'). Default: UTC. */
  timeZone?: string;
  /** Args of each fire's job. Default null. */
  args?: TArgs;
  /** Fires missed while no leader ran: 'skip', 'once' (default) or 'all'. */
  missed?: ScheduleMissed;
  /** Concurrency key of each fire's job; required when the handler's queue has keyConcurrency. */
  concurrencyKey?: string;
}

export interface PeriodicMetadata extends PeriodicOptions {
  cron: string;
}

/**
 * Runs the method's @JobHandler kind on a cron timeline, once per fire across the whole fleet:
 * the maintenance leader enqueues one job per fire (5 fields, or 6 with seconds first).
 *
 *   @JobHandler('report.daily', { queue: 'reports' })
 *   @Periodic('0 3 * * *', { timeZone: 'Europe/Berlin' })
 */
export function Periodic<TArgs = unknown>(cron: string, options: PeriodicOptions<TArgs> = {}): MethodDecorator {
  return (_target, _key, descriptor) => {
    const method = descriptor.value as object;
    const list = (Reflect.getMetadata(PERIODIC_METADATA, method) as PeriodicMetadata[] | undefined) ?? [];
    Reflect.defineMetadata(PERIODIC_METADATA, [...list, { ...options, cron }], method);
    return descriptor;
  };
}
