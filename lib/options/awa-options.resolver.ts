import { DEFAULT_QUEUE } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import { AwaOptionError } from '../errors/awa-option.error.js';
import { checkScheduleOptions } from '../schedules/schedule-definition.js';
import { MODULE_DEFAULTS, RETENTION_DEFAULTS } from './awa-options.defaults.js';
import {
  MAX_INTERVAL_MS,
  MAX_TIMER_MS,
  QUEUE_NAME,
  checkName,
  checkNumber,
  describe,
  pick,
  rejectUnknownKeys,
  type Rule,
} from './awa-options.checks.js';
import { resolveQueue } from './awa-options.queues.js';
import { resolveTickTimer } from './tick-timer.js';
import { resolveJobEventsOptions } from './job-events.options.js';
import type { AwaModuleAsyncOptions, AwaModuleOptions } from './awa-options.interface.js';
import type { ResolvedAwaOptions, ResolvedQueueOptions } from './awa-options.resolved.js';

/**
 * The keys each options object may have; anything else is a typo or a setting nestjs-awa does not
 * have, and is refused rather than ignored. `satisfies` keeps the lists in step with the interfaces.
 */
const MODULE_KEYS = Object.keys({
  name: 1,
  dataSource: 1,
  readDataSource: 1,
  queues: 1,
  heartbeatInterval: 1,
  heartbeatStaleAfter: 1,
  maintenanceInterval: 1,
  rescueBatchSize: 1,
  heartbeatBatchSize: 1,
  migrationsRun: 1,
  shutdownTimeout: 1,
  maxArgsBytes: 1,
  orphanSweepInterval: 1,
  livenessProbe: 1,
  connectionMode: 1,
  statementTimeout: 1,
  retention: 1,
  jobEvents: 1,
  testing: 1,
  maxOutputBytes: 1,
  maxProgressBytes: 1,
  schedules: 1,
  scheduleInterval: 1,
  scheduleCron: 1,
  maintenanceCron: 1,
  orphanSweepCron: 1,
} satisfies Record<keyof AwaModuleOptions, 1>);
const ASYNC_KEYS = Object.keys({
  imports: 1,
  name: 1,
  dataSource: 1,
  readDataSource: 1,
  useFactory: 1,
  inject: 1,
} satisfies Record<keyof AwaModuleAsyncOptions, 1>);
/** The options forRootAsync takes itself, before its factory runs. */
const ASYNC_OWN_KEYS = ['name', 'dataSource', 'readDataSource'] as const;
/** A module name: like a queue name. */
const MODULE_NAME = QUEUE_NAME;
const RETENTION_KEYS = Object.keys(RETENTION_DEFAULTS);

/** forRootAsync's own options: a factory, and no key it does not know. */
export function checkAsyncOptions(options: AwaModuleAsyncOptions): void {
  if (!options || typeof options.useFactory !== 'function') {
    throw new AwaOptionError('useFactory', 'forRootAsync needs a useFactory function');
  }
  rejectUnknownKeys('', options, ASYNC_KEYS);
}

/**
 * The options a forRootAsync factory resolved to. `name`, `dataSource` and `readDataSource` belong to
 * forRootAsync itself (the DataSources are looked up before the factory runs), so one returned by
 * the factory would be ignored: it is refused instead.
 */
export function resolveAsyncOptions(
  raw: AwaModuleOptions | undefined,
  own: Pick<AwaModuleAsyncOptions, (typeof ASYNC_OWN_KEYS)[number]>,
): ResolvedAwaOptions {
  const given = Object.fromEntries(ASYNC_OWN_KEYS.filter((k) => own[k] !== undefined).map((k) => [k, own[k]]));
  if (raw == null) return resolveAwaOptions(given);
  if (typeof raw !== 'object') return resolveAwaOptions(raw); // refused, as not an object
  const misplaced = ASYNC_OWN_KEYS.find((key) => key in raw);
  if (misplaced) {
    throw new AwaOptionError(
      misplaced,
      'set it on forRootAsync itself, not in what useFactory returns: the ' +
        'DataSource is looked up before the factory runs',
    );
  }
  return resolveAwaOptions({ ...raw, ...given });
}

/** Validates raw module options and fills in defaults. Throws an AwaOptionError naming the bad option. */
export function resolveAwaOptions(raw: AwaModuleOptions | undefined): ResolvedAwaOptions {
  if (raw !== undefined && (raw === null || typeof raw !== 'object')) {
    throw new AwaOptionError('options', `expected an object, got ${describe(raw)}`);
  }
  const o = raw ?? {};
  rejectUnknownKeys('', o, MODULE_KEYS);
  const name = checkName('name', o.name, 'a module name of 1-100 letters, digits, _ . : -', MODULE_NAME);
  checkName('dataSource', o.dataSource, 'a DataSource name');
  checkName('readDataSource', o.readDataSource, 'a DataSource name');
  if (o.queues !== undefined && (o.queues === null || typeof o.queues !== 'object' || Array.isArray(o.queues))) {
    throw new AwaOptionError('queues', `expected an object of queue name -> options, got ${describe(o.queues)}`);
  }
  const queues = new Map<string, ResolvedQueueOptions>();
  // The queue 'default' is the default module's; a named module has only the queues it declares.
  if (name === undefined) queues.set(DEFAULT_QUEUE, resolveQueue(DEFAULT_QUEUE, o.queues?.[DEFAULT_QUEUE]));
  for (const [queue, q] of Object.entries(o.queues ?? {})) {
    if (!queues.has(queue)) queues.set(queue, resolveQueue(queue, q));
  }
  if (queues.size === 0) throw new AwaOptionError('queues', AwaMessages.namedModuleWithoutQueues(name!));

  const num = (key: keyof typeof MODULE_DEFAULTS, rule: Rule, integer: boolean, max?: number) =>
    checkNumber(key, pick(o[key] as number | undefined, MODULE_DEFAULTS[key] as number), rule, integer, max);

  const heartbeatInterval = num('heartbeatInterval', 'positive', false, MAX_TIMER_MS);
  const heartbeatStaleAfter = num('heartbeatStaleAfter', 'positive', false, MAX_INTERVAL_MS);
  if (heartbeatStaleAfter <= heartbeatInterval) {
    throw new AwaOptionError(
      'heartbeatStaleAfter',
      `must be greater than heartbeatInterval (${heartbeatInterval}), or every ` +
        `live lease would look stale; got ${heartbeatStaleAfter}`,
    );
  }
  if (o.migrationsRun !== undefined && typeof o.migrationsRun !== 'boolean') {
    throw new AwaOptionError('migrationsRun', `expected a boolean, got ${describe(o.migrationsRun)}`);
  }
  if (o.testing !== undefined && typeof o.testing !== 'boolean') {
    throw new AwaOptionError('testing', `expected a boolean, got ${describe(o.testing)}`);
  }
  if (o.livenessProbe !== undefined && o.livenessProbe !== 'session' && o.livenessProbe !== 'heartbeat') {
    throw new AwaOptionError('livenessProbe', `expected 'session' or 'heartbeat', got ${describe(o.livenessProbe)}`);
  }
  if (o.connectionMode !== undefined && o.connectionMode !== 'direct' && o.connectionMode !== 'transaction-pooler') {
    throw new AwaOptionError(
      'connectionMode',
      `expected 'direct' or 'transaction-pooler', got ${describe(o.connectionMode)}`,
    );
  }
  const pooled = o.connectionMode === 'transaction-pooler';
  // A handoff reaches its worker by NOTIFY, which a transaction pooler does not carry: off there, refused if asked for.
  if (pooled) {
    const asked = Object.entries(o.queues ?? {}).find(([, q]) => q?.handoff !== undefined && q.handoff !== false);
    if (asked)
      throw new AwaOptionError(
        `queues.${asked[0]}.handoff`,
        "needs connectionMode 'direct' (no LISTEN behind a pooler)",
      );
    for (const [queue, q] of queues) queues.set(queue, { ...q, handoff: false });
  }
  if (pooled && o.livenessProbe === 'session') {
    throw new AwaOptionError(
      'livenessProbe',
      "'session' needs a session of its own, which a transaction-mode pooler does not keep; with " +
        "connectionMode 'transaction-pooler' leave it out (it is 'heartbeat')",
    );
  }
  if (o.retention !== undefined && (o.retention === null || typeof o.retention !== 'object')) {
    throw new AwaOptionError('retention', `expected an object, got ${describe(o.retention)}`);
  }
  if (o.retention) rejectUnknownKeys('retention.', o.retention, RETENTION_KEYS);
  const tick = (interval: 'maintenanceInterval' | 'orphanSweepInterval' | 'scheduleInterval', cron: string) =>
    resolveTickTimer({ interval: o[interval], cron: o[cron as keyof AwaModuleOptions] }, interval, cron, () =>
      num(interval, 'positive', false, MAX_TIMER_MS),
    );
  const maintenance = tick('maintenanceInterval', 'maintenanceCron');
  const orphanSweep = tick('orphanSweepInterval', 'orphanSweepCron');
  const schedule = tick('scheduleInterval', 'scheduleCron');
  const maxArgsBytes = num('maxArgsBytes', 'positive', true, 256 * 1024 * 1024);
  return {
    name,
    dataSource: o.dataSource,
    readDataSource: o.readDataSource,
    queues,
    heartbeatInterval,
    heartbeatStaleAfter,
    maintenanceInterval: maintenance.interval,
    rescueBatchSize: num('rescueBatchSize', 'positive', true, 100_000),
    heartbeatBatchSize: num('heartbeatBatchSize', 'positive', true, 100_000),
    migrationsRun: o.migrationsRun ?? MODULE_DEFAULTS.migrationsRun,
    shutdownTimeout: num('shutdownTimeout', 'nonNegative', false, MAX_TIMER_MS),
    maxArgsBytes,
    orphanSweepInterval: orphanSweep.interval,
    livenessProbe: pooled ? 'heartbeat' : (o.livenessProbe ?? 'session'),
    connectionMode: o.connectionMode ?? 'direct',
    statementTimeout: num('statementTimeout', 'nonNegative', true, MAX_TIMER_MS),
    maxOutputBytes: num('maxOutputBytes', 'positive', true, 64 * 1024 * 1024),
    maxProgressBytes: num('maxProgressBytes', 'positive', true, 1024 * 1024),
    retention: {
      completed: checkNumber(
        'retention.completed',
        pick(o.retention?.completed, RETENTION_DEFAULTS.completed),
        'nonNegative',
        false,
        MAX_INTERVAL_MS,
      ),
      failed: checkNumber(
        'retention.failed',
        pick(o.retention?.failed, RETENTION_DEFAULTS.failed),
        'nonNegative',
        false,
        MAX_INTERVAL_MS,
      ),
    },
    jobEvents: resolveJobEventsOptions(o.jobEvents),
    testing: o.testing ?? MODULE_DEFAULTS.testing,
    schedules: checkScheduleOptions(o.schedules, { queues, maxArgsBytes }),
    scheduleInterval: schedule.interval,
    scheduleCron: schedule.cron,
    maintenanceCron: maintenance.cron,
    orphanSweepCron: orphanSweep.cron,
  };
}
