import { checkRetryAfter } from '../errors/rate-limited.error.js';
import { AwaErrorCodes } from '../errors/awa-error-codes.js';
import type { RateLimited } from '../interfaces/job.interface.js';

/** Brands the marker across copies of the package (ESM and CommonJS builds loaded side by side). */
const RATE_LIMITED = Symbol.for('nestjs-awa.rateLimited');

/** @internal What job.rateLimit() returns. */
export function rateLimitMarker(retryAfterMs: number): RateLimited {
  return Object.freeze({ retryAfterMs: checkRetryAfter(retryAfterMs), [RATE_LIMITED]: true });
}

/**
 * @internal The back-off a handler asked for: its returned marker or a thrown RateLimitedError (matched
 * by code, so it holds across package copies); undefined for anything else.
 */
export function backOffOf(value: unknown): number | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as { [RATE_LIMITED]?: unknown; code?: unknown; retryAfterMs?: unknown };
  if ((v[RATE_LIMITED] === true || v.code === AwaErrorCodes.rateLimited) && typeof v.retryAfterMs === 'number')
    return v.retryAfterMs;
  return undefined;
}
