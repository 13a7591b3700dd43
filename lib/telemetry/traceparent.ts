import type { SpanContext } from '@opentelemetry/api';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const INVALID_TRACE = '0'.repeat(32);
const INVALID_SPAN = '0'.repeat(16);

/** @internal A span context as a W3C `traceparent` (version 00), or undefined if it is not valid. */
export function formatTraceparent(context: SpanContext): string | undefined {
  const { traceId, spanId, traceFlags } = context;
  if (!/^[0-9a-f]{32}$/.test(traceId) || traceId === INVALID_TRACE) return undefined;
  if (!/^[0-9a-f]{16}$/.test(spanId) || spanId === INVALID_SPAN) return undefined;
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** @internal A stored `traceparent` as a remote span context; undefined for null or a malformed one. */
export function parseTraceparent(text: string | null | undefined): SpanContext | undefined {
  const match = text ? TRACEPARENT.exec(text) : null;
  if (!match || match[1] === INVALID_TRACE || match[2] === INVALID_SPAN) return undefined;
  return { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16), isRemote: true };
}
