import { toStorableText } from './unicode-text.js';

/** A readable one-line text for anything a handler may throw (an Error, a string, undefined, ...). */
export function describeThrown(value: unknown): string {
  if (value instanceof Error) {
    const cause = value.cause === undefined ? '' : ` (cause: ${describeThrown(value.cause)})`;
    return `${value.name}: ${value.message}${cause}`;
  }
  if (value === undefined) return 'a handler threw undefined';
  if (typeof value === 'string') return value;
  try {
    return `thrown value: ${JSON.stringify(value) ?? String(value)}`;
  } catch {
    return `thrown value: ${String(value)}`;
  }
}

/**
 * Truncates long error texts so one failure cannot bloat a job row, and makes them storable: a
 * NUL or a lone surrogate in a handler's message would otherwise fail the whole failJobs batch.
 */
export function clip(text: string, max = 8_000): string {
  return toStorableText(text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`);
}
