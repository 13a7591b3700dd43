import { AwaOptionError } from '../errors/awa-option.error.js';

/** Durable job events (docs/durable-events.md): how each instance delivers its @OnJobEvent groups. */
export interface JobEventsOptions {
  /** How often a group looks for new events when it found none (and for a lease to take over), in ms. Default 500. */
  pollInterval?: number;
  /**
   * How long a group's lease lasts without renewal, in ms: the holder renews it while it runs; another
   * instance takes the group over this long after the holder stopped renewing (crash, lost database).
   * Default 30_000.
   */
  leaseDuration?: number;
  /** Events read per query. Default 100. */
  batchSize?: number;
  /** Delay before a group retries an event its handler threw on: base * 2^(failures-1), in ms. Default 1_000. */
  retryBaseDelay?: number;
  /** Upper bound of that delay, in ms. Default 60_000. */
  retryMaxDelay?: number;
  /**
   * How long an event is kept once every group has passed it, in ms, so a group can be replayed that far
   * back. 0 keeps events forever. Default 604_800_000 (7 days).
   */
  retention?: number;
}

export const JOB_EVENTS_DEFAULTS: Required<JobEventsOptions> = {
  pollInterval: 500,
  leaseDuration: 30_000,
  batchSize: 100,
  retryBaseDelay: 1_000,
  retryMaxDelay: 60_000,
  retention: 604_800_000,
};

/** Upper bounds: timers (setTimeout's cap) and a 100-year retention. */
const MAX: Record<keyof JobEventsOptions, number> = {
  pollInterval: 2_147_483_647,
  leaseDuration: 2_147_483_647,
  batchSize: 10_000,
  retryBaseDelay: 2_147_483_647,
  retryMaxDelay: 2_147_483_647,
  retention: 3_155_760_000_000,
};

/** The option `jobEvents`, checked and completed with the defaults. */
export function resolveJobEventsOptions(raw: unknown): Required<JobEventsOptions> {
  if (raw === undefined) return { ...JOB_EVENTS_DEFAULTS };
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new AwaOptionError('jobEvents', `expected an object, got ${JSON.stringify(raw)}`);
  const given = raw as Record<string, unknown>;
  const out = { ...JOB_EVENTS_DEFAULTS };
  for (const key of Object.keys(given)) {
    if (!(key in JOB_EVENTS_DEFAULTS))
      throw new AwaOptionError(`jobEvents.${key}`, `unknown option; known: ${Object.keys(MAX).join(', ')}`);
    const name = key as keyof JobEventsOptions;
    const value = given[key];
    if (value === undefined) continue;
    const min = name === 'retention' ? 0 : 1;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX[name])
      throw new AwaOptionError(
        `jobEvents.${key}`,
        `expected an integer from ${min} to ${MAX[name]}, got ${JSON.stringify(value)}`,
      );
    out[name] = value;
  }
  return out;
}
