import { DEFAULT_QUEUE } from '../awa.constants.js';
import { AwaMessages, ScheduleMessages } from '../awa.messages.js';
import { checkCron } from '../cron/cron.js';
import { AwaOptionError } from '../errors/awa-option.error.js';
import { EnqueueValidationError } from '../errors/enqueue-validation.error.js';
import { encodeJob } from '../producer/enqueue-validator.js';
import type { DeclaredPeriodic } from '../awa.explorer.js';
import type { CheckedSchedule, ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import type { ScheduleMissed } from '../sql/schedules.sql.js';
import { isStorableText } from '../util/unicode-text.js';
import { findUnknownKey } from '../util/nearest-name.js';
import type { ScheduleDefinition } from './schedule.interface.js';

const SCHEDULE_KEYS = Object.keys({
  name: 1,
  cron: 1,
  kind: 1,
  args: 1,
  queue: 1,
  timeZone: 1,
  missed: 1,
  concurrencyKey: 1,
} satisfies Record<keyof ScheduleDefinition, 1>);
const MISSED: readonly ScheduleMissed[] = ['skip', 'once', 'all'];

const show = (value: unknown) => (typeof value === 'string' ? JSON.stringify(value) : String(value));

/**
 * Checks one schedule definition before anything touches the database. Every error is an
 * AwaOptionError whose path is `prefix` + the key, e.g. `schedules[2].cron`.
 */
export function checkSchedule(
  raw: unknown,
  prefix: string,
  options: Pick<ResolvedAwaOptions, 'queues' | 'maxArgsBytes'>,
): CheckedSchedule {
  const at = (key: string) => `${prefix}${key}`;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new AwaOptionError(prefix.replace(/\.$/, ''), ScheduleMessages.notAnObject(show(raw)));
  const unknown = findUnknownKey(raw, SCHEDULE_KEYS);
  if (unknown)
    throw new AwaOptionError(at(unknown.key), AwaMessages.unknownOption(unknown.nearest, unknown.close, SCHEDULE_KEYS));
  const def = raw as ScheduleDefinition;
  if (typeof def.name !== 'string' || def.name.trim() === '' || def.name.length > 200 || !isStorableText(def.name))
    throw new AwaOptionError(at('name'), ScheduleMessages.nameInvalid());
  checkCron(def.cron, def.timeZone, at);
  if (def.missed !== undefined && !MISSED.includes(def.missed))
    throw new AwaOptionError(at('missed'), ScheduleMessages.missedInvalid(show(def.missed)));
  try {
    // The job checks of enqueue: kind, queue (if given), args and the concurrency key's form. Whether
    // the queue needs a key is checkScheduleTarget's, once the queue is known (the handler's, at boot).
    encodeJob(
      { kind: def.kind, args: def.args ?? null, queue: def.queue, concurrencyKey: def.concurrencyKey },
      { ...options, queues: unkeyed(options.queues) } as ResolvedAwaOptions,
      () => DEFAULT_QUEUE,
    );
  } catch (error) {
    if (error instanceof EnqueueValidationError) throw new AwaOptionError(at(error.field), error.message);
    throw error;
  }
  const checked: CheckedSchedule = {
    name: def.name,
    cron: def.cron,
    kind: def.kind,
    args: def.args ?? null,
    queue: def.queue,
    timeZone: def.timeZone ?? null,
    missed: def.missed ?? 'once',
    concurrencyKey: def.concurrencyKey ?? null,
  };
  if (def.queue !== undefined) checkScheduleTarget(checked, def.queue, undefined, prefix, options);
  return checked;
}

/**
 * Refuses a schedule whose jobs no claim could take in `queue`, the queue it resolves to: one that
 * this app handles `kind` in another queue (`handlerQueue`), or an unkeyed one in a queue with
 * keyConcurrency (which claims only jobs with a concurrency key).
 */
export function checkScheduleTarget(
  schedule: Pick<CheckedSchedule, 'name' | 'kind' | 'concurrencyKey'>,
  queue: string,
  handlerQueue: string | undefined,
  prefix: string,
  options: Pick<ResolvedAwaOptions, 'queues'>,
): void {
  if (handlerQueue !== undefined && handlerQueue !== queue)
    throw new AwaOptionError(
      `${prefix}queue`,
      ScheduleMessages.queueNotHandled(schedule.name, schedule.kind, queue, handlerQueue),
    );
  if (schedule.concurrencyKey === null && (options.queues.get(queue)?.keyConcurrency ?? 0) > 0)
    throw new AwaOptionError(`${prefix}concurrencyKey`, ScheduleMessages.concurrencyKeyRequired(schedule.name, queue));
}

/** The names of the schedules an app declares in code: its @Periodic (by default its kind) and the option `schedules`. */
export function declaredScheduleNames(
  periodic: readonly DeclaredPeriodic[],
  schedules: readonly Pick<CheckedSchedule, 'name'>[],
): string[] {
  return [...periodic.map((p) => p.periodic.name ?? p.kind), ...schedules.map((s) => s.name)];
}

/** The queues as encodeJob reads them, without keyConcurrency (checkScheduleTarget checks it). */
function unkeyed(queues: ResolvedAwaOptions['queues']): ResolvedAwaOptions['queues'] {
  return new Map([...queues].map(([name, queue]) => [name, { ...queue, keyConcurrency: 0 }]));
}

/** Checks the module option `schedules`: an array of definitions with distinct names. */
export function checkScheduleOptions(
  raw: unknown,
  options: Pick<ResolvedAwaOptions, 'queues' | 'maxArgsBytes'>,
): CheckedSchedule[] {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) throw new AwaOptionError('schedules', `expected an array, got ${show(raw)}`);
  const seen = new Map<string, string>();
  return raw.map((item, i) => {
    const checked = checkSchedule(item, `schedules[${i}].`, options);
    const first = seen.get(checked.name);
    if (first) throw new AwaOptionError(`schedules[${i}].name`, ScheduleMessages.nameDuplicate(checked.name, first));
    seen.set(checked.name, `schedules[${i}]`);
    return checked;
  });
}
