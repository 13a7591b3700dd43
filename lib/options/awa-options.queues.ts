import { AwaOptionError } from '../errors/awa-option.error.js';
import { QUEUE_DEFAULTS } from './awa-options.defaults.js';
import {
  MAX_INTERVAL_MS,
  MAX_TIMER_MS,
  QUEUE_NAME,
  checkNumber,
  describe,
  pick,
  rejectUnknownKeys,
} from './awa-options.checks.js';
import type { QueueOptions, RateLimitOptions } from './awa-options.interface.js';
import type { ResolvedQueueOptions } from './awa-options.resolved.js';

// The option `queues`: one queue's options, checked and completed with the defaults.

const QUEUE_KEYS = Object.keys(QUEUE_DEFAULTS);

/** Queue `name`'s options (`raw`, undefined for none), checked; throws an AwaOptionError naming the bad one. */
export function resolveQueue(name: string, raw: QueueOptions | undefined): ResolvedQueueOptions {
  const at = (key: string) => `queues.${name}.${key}`;
  if (!QUEUE_NAME.test(name)) {
    throw new AwaOptionError(`queues.${name}`, 'a queue name is 1-100 characters of letters, digits, _ . : -');
  }
  if (raw !== undefined && (raw === null || typeof raw !== 'object')) {
    throw new AwaOptionError(`queues.${name}`, `expected an object, got ${describe(raw)}`);
  }
  const q = raw ?? {};
  rejectUnknownKeys(`queues.${name}.`, q, QUEUE_KEYS);
  const resolved: ResolvedQueueOptions = {
    name,
    concurrency: checkNumber(
      at('concurrency'),
      pick(q.concurrency, QUEUE_DEFAULTS.concurrency),
      'positive',
      true,
      10_000,
    ),
    deadlineDuration: checkNumber(
      at('deadlineDuration'),
      pick(q.deadlineDuration, QUEUE_DEFAULTS.deadlineDuration),
      'nonNegative',
      false,
      MAX_TIMER_MS,
    ),
    maxAttempts: checkNumber(
      at('maxAttempts'),
      pick(q.maxAttempts, QUEUE_DEFAULTS.maxAttempts),
      'positive',
      true,
      1_000_000,
    ),
    retryBaseDelay: checkNumber(
      at('retryBaseDelay'),
      pick(q.retryBaseDelay, QUEUE_DEFAULTS.retryBaseDelay),
      'nonNegative',
      false,
    ),
    retryMaxDelay: checkNumber(
      at('retryMaxDelay'),
      pick(q.retryMaxDelay, QUEUE_DEFAULTS.retryMaxDelay),
      'nonNegative',
      false,
    ),
    pollInterval: checkNumber(
      at('pollInterval'),
      pick(q.pollInterval, QUEUE_DEFAULTS.pollInterval),
      'positive',
      false,
      MAX_TIMER_MS,
    ),
    prefetch: checkNumber(at('prefetch'), pick(q.prefetch, QUEUE_DEFAULTS.prefetch), 'nonNegative', true, 100_000),
    maxSnoozes: checkNumber(
      at('maxSnoozes'),
      pick(q.maxSnoozes, QUEUE_DEFAULTS.maxSnoozes),
      'nonNegative',
      true,
      1_000_000,
    ),
    rateLimit: resolveRateLimit(at('rateLimit'), q.rateLimit),
    keyConcurrency: checkNumber(
      at('keyConcurrency'),
      pick(q.keyConcurrency, QUEUE_DEFAULTS.keyConcurrency),
      'nonNegative',
      true,
      1_000_000,
    ),
    handoff: QUEUE_DEFAULTS.handoff,
  };
  if (q.handoff !== undefined && typeof q.handoff !== 'boolean' && q.handoff !== 'eager')
    throw new AwaOptionError(at('handoff'), `expected a boolean or 'eager', got ${describe(q.handoff)}`);
  // A handed job skips the claim, where the limits are enforced: off by default with them, refused if asked for.
  const flowControl = resolved.rateLimit !== null || resolved.keyConcurrency > 0;
  if (q.handoff !== undefined && q.handoff !== false && flowControl)
    throw new AwaOptionError(at('handoff'), 'cannot be combined with rateLimit or keyConcurrency');
  resolved.handoff = q.handoff ?? (QUEUE_DEFAULTS.handoff && !flowControl);
  if (resolved.retryMaxDelay < resolved.retryBaseDelay) {
    throw new AwaOptionError(at('retryMaxDelay'), `must be at least retryBaseDelay (${resolved.retryBaseDelay})`);
  }
  return resolved;
}

const RATE_LIMIT_KEYS = Object.keys({ limit: 1, period: 1 } satisfies Record<keyof RateLimitOptions, 1>);

/** A queue's rateLimit: null (none), or { limit, period } with nothing else. */
function resolveRateLimit(path: string, raw: RateLimitOptions | null | undefined): RateLimitOptions | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'object')
    throw new AwaOptionError(path, `expected { limit, period } or null, got ${describe(raw)}`);
  rejectUnknownKeys(`${path}.`, raw, RATE_LIMIT_KEYS);
  return {
    limit: checkNumber(`${path}.limit`, raw.limit, 'positive', true, 1_000_000),
    period: checkNumber(`${path}.period`, raw.period, 'positive', true, MAX_INTERVAL_MS),
  };
}
