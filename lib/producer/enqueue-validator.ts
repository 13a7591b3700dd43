import { PRIORITY_MAX, PRIORITY_MIN } from '../awa.constants.js';
import { AwaMessages, FlowMessages } from '../awa.messages.js';
import { EnqueueValidationError } from '../errors/enqueue-validation.error.js';
import type { EnqueueManyItem, EnqueueOptions } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { findUnknownKey } from '../util/nearest-name.js';
import { isStorableText, unstorableInJson } from '../util/unicode-text.js';
import { encodeTags, encodeUnique, type EncodedUnique } from './unique-options.js';

// Years 1 to 9999 (Date.UTC maps years 0-99 to 19xx, hence the string form).
const EARLIEST_RUN_AT = Date.parse('0001-01-01T00:00:00Z');
const LATEST_RUN_AT = Date.parse('9999-12-31T23:59:59Z');

/**
 * The keys enqueue options and enqueueMany items may have. An unknown one (a typo such as `runAfter`)
 * is refused with an EnqueueValidationError, like every other enqueue mistake, rather than ignored.
 */
export const ENQUEUE_OPTION_KEYS = Object.keys({
  queue: 1,
  priority: 1,
  runAt: 1,
  maxAttempts: 1,
  manager: 1,
  unique: 1,
  tags: 1,
  concurrencyKey: 1,
} satisfies Record<keyof EnqueueOptions, 1>);
export const ENQUEUE_MANY_OPTION_KEYS = ['manager'];
const ITEM_KEYS = Object.keys({
  kind: 1,
  args: 1,
  queue: 1,
  priority: 1,
  runAt: 1,
  maxAttempts: 1,
  unique: 1,
  tags: 1,
  concurrencyKey: 1,
} satisfies Record<keyof EnqueueManyItem, 1>);

/**
 * The most JSON one enqueue call sends, in bytes: a string past V8's limit (about 512 MiB) cannot
 * even be built, and PostgreSQL takes at most 1 GB in a parameter.
 */
export const MAX_BATCH_BYTES = 256 * 1_048_576;
/**
 * From this size on a batch goes through insertJobsLarge (JSON text) instead of insertJobs (one
 * jsonb, at most 256 MiB, which small numbers can make six times its JSON text).
 */
export const LARGE_BATCH_BYTES = 32 * 1_048_576;

/** The bytes of JSON of a batch's jobs, about (exactly only when it might pass `from`); refuses one past MAX_BATCH_BYTES. */
export function batchBytes(encoded: ReadonlyArray<{ args: string }>, from = LARGE_BATCH_BYTES): number {
  const OTHER_FIELDS = 64; // bytes of a job's other fields, about
  let chars = 0;
  for (const e of encoded) chars += e.args.length;
  // A UTF-16 unit is at most 3 bytes of UTF-8: only a batch that might pass `from` is measured exactly.
  if (3 * chars + OTHER_FIELDS * encoded.length < from) return chars + OTHER_FIELDS * encoded.length;
  let bytes = OTHER_FIELDS * encoded.length;
  for (const e of encoded) bytes += Buffer.byteLength(e.args);
  if (bytes > MAX_BATCH_BYTES)
    throw new EnqueueValidationError('jobs', AwaMessages.enqueueBatchTooLarge(bytes, MAX_BATCH_BYTES));
  return bytes;
}

/** Refuses options (or, with `index`, an enqueueMany item) that are not an object or carry a key not in `known`. */
export function checkEnqueueOptions(options: unknown, known: readonly string[], index?: number): void {
  if (options === null || typeof options !== 'object') {
    if (index !== undefined) throw new EnqueueValidationError('item', AwaMessages.enqueueItemInvalid(), index);
    throw new EnqueueValidationError('options', AwaMessages.enqueueOptionsInvalid());
  }
  const unknown = findUnknownKey(options, known);
  if (unknown) {
    throw new EnqueueValidationError(
      unknown.key,
      AwaMessages.enqueueOptionUnknown(unknown.key, unknown.nearest, unknown.close, known),
      index,
    );
  }
}

/** One job encoded for the insert statements: its checked fields as JSON texts. */
export interface EncodedJob {
  queue: string;
  kind: string;
  args: string;
  priority: number;
  maxAttempts: number;
  /** 'null' when not given (the job runs now). */
  runAt: string;
  /** A JSON array, or '' when the job has no tags. */
  tags: string;
  concurrencyKey?: string;
  /** A unique job: what resolveUniqueJobs needs of it (args and run_at as JSON, for replace). */
  unique?: EncodedUnique & { args: string; runAt: string };
}

/**
 * One job, checked and encoded as an element of the insert statement's JSON array. `index` is its
 * position in enqueueMany (undefined for enqueue), carried by every EnqueueValidationError.
 */
export function encodeJob(
  item: EnqueueManyItem,
  options: ResolvedAwaOptions,
  defaultQueue: (kind: string) => string,
  index?: number,
): EncodedJob {
  const refuse = (field: string, message: string): never => {
    throw new EnqueueValidationError(field, message, index);
  };
  // One transaction per call: a manager per item would be a different question, so say where it goes.
  if (item !== null && typeof item === 'object' && 'manager' in item)
    refuse('manager', AwaMessages.enqueueManagerInItem());
  checkEnqueueOptions(item, ITEM_KEYS, index);
  const { kind } = item;
  if (typeof kind !== 'string' || kind.trim() === '' || kind.length > 200)
    refuse('kind', AwaMessages.enqueueKindInvalid());
  if (!isStorableText(kind)) refuse('kind', AwaMessages.enqueueKindUnstorable());
  const queue = item.queue ?? defaultQueue(kind);
  const queueOptions = options.queues.get(queue);
  if (!queueOptions) return refuse('queue', AwaMessages.enqueueQueueUnknown(String(queue), [...options.queues.keys()]));

  const priority = item.priority ?? 0;
  if (!Number.isInteger(priority) || priority < PRIORITY_MIN || priority > PRIORITY_MAX) {
    refuse('priority', AwaMessages.enqueuePriorityInvalid(PRIORITY_MIN, PRIORITY_MAX));
  }
  const maxAttempts = item.maxAttempts ?? queueOptions.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000_000) {
    refuse('maxAttempts', AwaMessages.enqueueMaxAttemptsInvalid());
  }
  let runAt = 'null';
  if (item.runAt !== undefined) {
    const t = item.runAt instanceof Date ? item.runAt.getTime() : NaN;
    if (Number.isNaN(t) || t < EARLIEST_RUN_AT || t > LATEST_RUN_AT) refuse('runAt', AwaMessages.enqueueRunAtInvalid());
    runAt = JSON.stringify(item.runAt.toISOString());
  }
  const key = item.concurrencyKey;
  if (key !== undefined && (typeof key !== 'string' || key.length < 1 || key.length > 200 || !isStorableText(key)))
    refuse('concurrencyKey', FlowMessages.concurrencyKeyInvalid());
  if (key === undefined && queueOptions.keyConcurrency > 0)
    refuse('concurrencyKey', FlowMessages.concurrencyKeyRequired(queue));
  const args = encodeArgs(item.args, options.maxArgsBytes, index);
  const tags = encodeTags(item.tags, refuse);
  const unique = item.unique === undefined ? undefined : encodeUnique(item.unique, { kind, queue, args }, refuse);
  return {
    queue,
    kind: JSON.stringify(kind),
    args,
    priority,
    maxAttempts,
    runAt,
    tags,
    concurrencyKey: key === undefined ? undefined : JSON.stringify(key),
    unique: unique && { ...unique, args, runAt },
  };
}

/**
 * insertJobs' JSON array: one array per job, [kind, queue, args, priority, max_attempts, run_at, tags,
 * concurrency_key, traceparent], trailing nulls left out. Positions, not keys: a third of the bytes
 * to build, send and parse. With a W3C `traceparent` (a span was active at enqueue), each job carries it.
 */
export function jobsPayload(encoded: readonly EncodedJob[], traceparent?: string): string {
  const trace = traceparent === undefined ? undefined : JSON.stringify(traceparent);
  let out = '[';
  for (let i = 0; i < encoded.length; i++) {
    const e = encoded[i]!;
    // Built from the end, so that trailing nulls are left out.
    let tail = trace === undefined ? '' : `,${trace}`;
    if (tail || e.concurrencyKey !== undefined) tail = `,${e.concurrencyKey ?? 'null'}${tail}`;
    if (tail || e.tags) tail = `,${e.tags || 'null'}${tail}`;
    if (tail || e.runAt !== 'null') tail = `,${e.runAt}${tail}`;
    out += `${i === 0 ? '' : ','}[${e.kind},${JSON.stringify(e.queue)},${e.args},${e.priority},${e.maxAttempts}${tail}]`;
  }
  return `${out}]`;
}

/**
 * One job as an object of insertUniqueJobs' (or insertGraph's) JSON array, with `extra` fields
 * (`"name":value,...`) after its own and the enqueue span's W3C traceparent when there is one.
 */
export function jobObject(e: EncodedJob, traceparent?: string, extra = ''): string {
  return (
    `{"kind":${e.kind},"queue":${JSON.stringify(e.queue)},"args":${e.args},` +
    `"priority":${e.priority},"max_attempts":${e.maxAttempts},"run_at":${e.runAt}` +
    (e.tags && `,"tags":${e.tags}`) +
    (e.unique ? `,${e.unique.fields}` : '') +
    (e.concurrencyKey === undefined ? '' : `,"concurrency_key":${e.concurrencyKey}`) +
    (traceparent === undefined ? '' : `,"traceparent":${JSON.stringify(traceparent)}`) +
    (extra && `,${extra}`) +
    '}'
  );
}

function encodeArgs(args: unknown, maxBytes: number, index: number | undefined): string {
  const refuse = (message: string): never => {
    throw new EnqueueValidationError('args', message, index);
  };
  let json: string | undefined;
  try {
    json = JSON.stringify(args);
  } catch (error) {
    // BigInt values and circular structures land here.
    refuse(AwaMessages.enqueueArgsInvalid(error instanceof Error ? error.message : String(error)));
  }
  if (json === undefined) return refuse(AwaMessages.enqueueArgsInvalid(`${typeof args} is not a JSON value`));
  // PostgreSQL's jsonb holds neither the NUL character nor half a surrogate pair.
  const unstorable = unstorableInJson(json);
  if (unstorable === 'nul')
    refuse(AwaMessages.enqueueArgsInvalid('strings must not contain the NUL character (\\u0000)'));
  if (unstorable === 'surrogate') {
    refuse(
      AwaMessages.enqueueArgsInvalid(
        'strings must not contain a lone UTF-16 surrogate (a string cut in the middle of a character)',
      ),
    );
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) refuse(AwaMessages.enqueueArgsTooLarge(bytes, maxBytes));
  return json;
}
