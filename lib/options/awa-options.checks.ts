import { AwaMessages } from '../awa.messages.js';
import { AwaOptionError } from '../errors/awa-option.error.js';
import { findUnknownKey } from '../util/nearest-name.js';

// The checks every section of the options shares: each throws an AwaOptionError naming the option.

/** A queue name, and a module name: 1-100 characters of letters, digits, _ . : - */
export const QUEUE_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;
export const MAX_TIMER_MS = 2_147_483_647; // setTimeout/setInterval cap
/** 100 years: the statements compute now() minus these, which must stay a valid timestamp. */
export const MAX_INTERVAL_MS = 3_155_760_000_000;

/** Refuses the first key of `value` not in `known`, naming it (`prefix` + key) and the nearest known one. */
export function rejectUnknownKeys(prefix: string, value: object, known: readonly string[]): void {
  const unknown = findUnknownKey(value, known);
  if (unknown)
    throw new AwaOptionError(prefix + unknown.key, AwaMessages.unknownOption(unknown.nearest, unknown.close, known));
}

export type Rule = 'positive' | 'nonNegative';

export function checkNumber(
  path: string,
  value: unknown,
  rule: Rule,
  integer: boolean,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const fail = (problem: string): never => {
    throw new AwaOptionError(path, `${problem}, got ${describe(value)}`);
  };
  if (typeof value !== 'number' || Number.isNaN(value)) fail('expected a number');
  const n = value as number;
  if (!Number.isFinite(n)) fail('expected a finite number');
  if (integer && !Number.isInteger(n)) fail('expected an integer');
  if (rule === 'positive' && n <= 0) fail('must be greater than 0');
  if (rule === 'nonNegative' && n < 0) fail('must not be negative');
  if (n > max) fail(`must be at most ${max}`);
  return n;
}

export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value == null) return String(value);
  return typeof value;
}

export function pick<T>(value: T | undefined, fallback: T): T {
  return value === undefined ? fallback : value;
}

/** An optional name option: a non-empty string (`pattern`, when given, holds it). */
export function checkName(path: string, value: unknown, what: string, pattern?: RegExp): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || (pattern && !pattern.test(value)))
    throw new AwaOptionError(path, `expected ${what}, got ${describe(value)}`);
  return value;
}
