import { AwaMessages } from '../awa.messages.js';
import { AwaOptionError } from '../errors/awa-option.error.js';
import { findUnknownKey } from '../util/nearest-name.js';
import { AwaTelemetryMessages } from './telemetry.messages.js';

/** What AwaTelemetryModule reports through @opentelemetry/api. */
export interface AwaTelemetryOptions {
  /** Counters, histograms and gauges under `awa.`. Default true. */
  metrics?: boolean;
  /** A producer span per enqueue and a consumer span per attempt. Default true. */
  traces?: boolean;
}

/** @internal */
export type ResolvedTelemetryOptions = Required<AwaTelemetryOptions>;

/** @internal */
export const AWA_TELEMETRY_OPTIONS = Symbol('AWA_TELEMETRY_OPTIONS');

const DEFAULTS: ResolvedTelemetryOptions = { metrics: true, traces: true };
const KEYS = Object.keys(DEFAULTS satisfies Record<keyof AwaTelemetryOptions, boolean>);

/** @internal Checks the options, naming a bad one (`telemetry.<key>`), and fills in the defaults. */
export function resolveTelemetryOptions(options: unknown): ResolvedTelemetryOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options))
    throw new AwaOptionError('telemetry', AwaTelemetryMessages.optionsNotObject);
  const unknown = findUnknownKey(options, KEYS);
  if (unknown)
    throw new AwaOptionError(
      `telemetry.${unknown.key}`,
      AwaMessages.unknownOption(unknown.nearest, unknown.close, KEYS),
    );
  const resolved = { ...DEFAULTS };
  for (const key of KEYS as Array<keyof AwaTelemetryOptions>) {
    const value = (options as AwaTelemetryOptions)[key];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') throw new AwaOptionError(`telemetry.${key}`, AwaTelemetryMessages.optionNotBoolean);
    resolved[key] = value;
  }
  return resolved;
}
