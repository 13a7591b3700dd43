import { createHash } from 'node:crypto';
import { AwaMessages, UniqueMessages } from '../awa.messages.js';
import { JOB_STATES, type JobState, type UniqueOptions } from '../interfaces/job.interface.js';
import { findUnknownKey } from '../util/nearest-name.js';
import { isStorableText } from '../util/unicode-text.js';

export const MAX_TAGS = 20;
export const MAX_TAG_LENGTH = 100;
export const MAX_UNIQUE_KEY_LENGTH = 200;

/**
 * The states a unique job must block in: it is inserted scheduled or available and may move among
 * these four until it finishes. A set without one of them would let a job re-enter the index while a
 * duplicate holds the key (the index would then refuse that job's own state change).
 */
export const UNIQUE_REQUIRED_STATES: readonly JobState[] = ['scheduled', 'available', 'running', 'retryable'];
/** `waiting` is not one to give: enqueueGraph adds it to a workflow job's states itself (docs/workflows.md). */
const UNIQUE_OPTIONAL_STATES = JOB_STATES.filter((s) => !UNIQUE_REQUIRED_STATES.includes(s) && s !== 'waiting');

const UNIQUE_KEYS = Object.keys({
  key: 1,
  byArgs: 1,
  byQueue: 1,
  period: 1,
  states: 1,
  replace: 1,
} satisfies Record<keyof UniqueOptions, 1>);

/** A failed check: throws an EnqueueValidationError for `field` (and the item's index). */
export type Refuse = (field: string, message: string) => never;

/** The unique fields of one job, as insertUniqueJobs reads them (the period bucket is added in SQL). */
export interface EncodedUnique {
  /** JSON fields `"unique_key":...,"unique_period":...,"unique_states":[...]`, without braces. */
  fields: string;
  /** The stored key before SQL appends the period's bucket. */
  key: string;
  replace: boolean;
}

/** Checks `tags`; returns them as a JSON array, or '' when there are none. */
export function encodeTags(tags: unknown, refuse: Refuse): string {
  if (tags === undefined) return '';
  const invalid = () => refuse('tags', UniqueMessages.tagsInvalid(MAX_TAGS, MAX_TAG_LENGTH));
  if (!Array.isArray(tags) || tags.length > MAX_TAGS) return invalid();
  for (const tag of tags) {
    if (typeof tag !== 'string' || tag === '' || tag.length > MAX_TAG_LENGTH || !isStorableText(tag)) invalid();
  }
  if (new Set(tags).size !== tags.length) invalid();
  return tags.length === 0 ? '' : JSON.stringify(tags);
}

/**
 * Checks `unique` and computes the key of the job `kind` in `queue` with args `args` (JSON):
 * `<key or kind>:<sha256 hex>`, the hash covering which of key/kind it is, that name, the queue
 * (byQueue), the canonical args (byArgs) and the period. SQL appends `:<bucket>` when there is a period.
 */
export function encodeUnique(
  unique: unknown,
  job: { kind: string; queue: string; args: string },
  refuse: Refuse,
): EncodedUnique {
  if (unique === null || typeof unique !== 'object' || Array.isArray(unique))
    return refuse('unique', UniqueMessages.uniqueInvalid());
  const unknown = findUnknownKey(unique, UNIQUE_KEYS);
  if (unknown) {
    const known = UNIQUE_KEYS.map((k) => `unique.${k}`);
    const field = `unique.${unknown.key}`;
    refuse(field, AwaMessages.enqueueOptionUnknown(field, `unique.${unknown.nearest}`, unknown.close, known));
  }
  const { key, byArgs = false, byQueue = false, period, states, replace = false } = unique as UniqueOptions;
  if (
    key !== undefined &&
    (typeof key !== 'string' || key === '' || key.length > MAX_UNIQUE_KEY_LENGTH || !isStorableText(key))
  )
    refuse('unique.key', UniqueMessages.keyInvalid(MAX_UNIQUE_KEY_LENGTH));
  for (const [name, flag] of Object.entries({ byArgs, byQueue, replace })) {
    if (typeof flag !== 'boolean') refuse(`unique.${name}`, UniqueMessages.flagInvalid(name));
  }
  if (period !== undefined && (!Number.isSafeInteger(period) || period < 1))
    refuse('unique.period', UniqueMessages.periodInvalid());
  const blocking = uniqueStates(states, refuse);
  const name = key ?? job.kind;
  const identity = [
    key === undefined ? 'kind' : 'key',
    name,
    byQueue ? job.queue : null,
    byArgs ? canonicalJson(JSON.parse(job.args)) : null,
    period ?? null,
  ];
  const hash = createHash('sha256').update(JSON.stringify(identity)).digest('hex');
  return {
    fields:
      `"unique_key":${JSON.stringify(`${name}:${hash}`)},"unique_period":${period ?? 'null'},` +
      `"unique_states":${JSON.stringify(blocking)}`,
    key: `${name}:${hash}`,
    replace,
  };
}

/** The blocking states in JOB_STATES order; the default is UNIQUE_REQUIRED_STATES. */
function uniqueStates(states: unknown, refuse: Refuse): JobState[] {
  if (states === undefined) return [...UNIQUE_REQUIRED_STATES];
  const invalid = () =>
    refuse('unique.states', UniqueMessages.statesInvalid(UNIQUE_REQUIRED_STATES, UNIQUE_OPTIONAL_STATES));
  if (!Array.isArray(states)) return invalid();
  const given = new Set<unknown>(states);
  if ([...given].some((s) => s === 'waiting' || !JOB_STATES.includes(s as JobState))) invalid();
  if (UNIQUE_REQUIRED_STATES.some((s) => !given.has(s))) invalid();
  return JOB_STATES.filter((s) => given.has(s));
}

/** JSON with every object's keys sorted, so `{a, b}` and `{b, a}` give the same text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}
