import type { CanActivate, ModuleMetadata, Type } from '@nestjs/common';
import { AwaOptionError } from '../errors/awa-option.error.js';
import { AwaMessages } from '../awa.messages.js';
import { findUnknownKey } from '../util/nearest-name.js';

/** Options of AwaDashboardModule.forRoot. */
export interface AwaDashboardOptions {
  /** URL prefix the dashboard and its JSON API are served under. Default '/awa'. */
  path?: string;
  /**
   * A Nest guard class (CanActivate) every page, asset and API call of the dashboard goes through.
   * Default: none, and the dashboard is OPEN (a warning is logged at boot).
   */
  guard?: Type<CanActivate>;
  /** Hide every action and refuse it with 403. Default false. */
  readOnly?: boolean;
  /** How often the pages poll their JSON API, in ms (the pause button stops it). Default 5000. */
  refreshInterval?: number;
  /** Modules the guard's own dependencies come from. */
  imports?: ModuleMetadata['imports'];
}

/** Dashboard options after validation, with the defaults filled in. */
export interface ResolvedDashboardOptions {
  path: string;
  guard: Type<CanActivate> | undefined;
  readOnly: boolean;
  refreshInterval: number;
  imports: NonNullable<ModuleMetadata['imports']>;
}

const KEYS = Object.keys({
  path: 1,
  guard: 1,
  readOnly: 1,
  refreshInterval: 1,
  imports: 1,
} satisfies Record<keyof AwaDashboardOptions, 1>);

/** A path prefix: one or more /segments of URL-safe characters (no route parameters or wildcards). */
const PATH = /^(\/[A-Za-z0-9._~-]+)+$/;

const fail = (path: string, problem: string): never => {
  throw new AwaOptionError(path, problem);
};

/** Validates the options, naming the bad one, and fills in the defaults. */
export function resolveDashboardOptions(options: AwaDashboardOptions = {}): ResolvedDashboardOptions {
  if (typeof options !== 'object' || options === null) fail('dashboard', 'must be an object');
  const unknown = findUnknownKey(options, KEYS);
  if (unknown) fail(`dashboard.${unknown.key}`, AwaMessages.unknownOption(unknown.nearest, unknown.close, KEYS));
  const path = (options.path ?? '/awa').replace(/\/+$/, '');
  if (typeof options.path !== 'undefined' && typeof options.path !== 'string')
    fail('dashboard.path', 'must be a string');
  if (!PATH.test(path)) fail('dashboard.path', `must look like '/awa' or '/admin/jobs' (got ${JSON.stringify(path)})`);
  if (options.guard !== undefined && typeof options.guard !== 'function')
    fail('dashboard.guard', 'must be a guard class (implementing CanActivate)');
  if (options.readOnly !== undefined && typeof options.readOnly !== 'boolean')
    fail('dashboard.readOnly', 'must be a boolean');
  const refresh = options.refreshInterval ?? 5_000;
  if (!Number.isInteger(refresh) || refresh < 100 || refresh > 3_600_000)
    fail('dashboard.refreshInterval', 'must be an integer number of ms from 100 to 3600000');
  if (options.imports !== undefined && !Array.isArray(options.imports)) fail('dashboard.imports', 'must be an array');
  return {
    path,
    guard: options.guard,
    readOnly: options.readOnly ?? false,
    refreshInterval: refresh,
    imports: options.imports ?? [],
  };
}
