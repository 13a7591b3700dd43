import { PRIORITY_MAX, PRIORITY_MIN } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import type { EnqueueManyItem } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolver.js';
import { isStorableText, unstorableInJson } from '../util/unicode-text.js';

// Years 1 to 9999 (Date.UTC maps years 0-99 to 19xx, hence the string form).
const EARLIEST_RUN_AT = Date.parse('0001-01-01T00:00:00Z');
const LATEST_RUN_AT = Date.parse('9999-12-31T23:59:59Z');

/** One job, checked and encoded as an element of the insert statement's JSON array. */
export function encodeJob(
  item: EnqueueManyItem, options: ResolvedAwaOptions, defaultQueue: (kind: string) => string,
): { queue: string; json: string } {
  const { kind } = item;
  if (typeof kind !== 'string' || kind.trim() === '' || kind.length > 200) throw new Error(AwaMessages.enqueueKindInvalid());
  if (!isStorableText(kind)) throw new Error(AwaMessages.enqueueKindUnstorable());
  const queue = item.queue ?? defaultQueue(kind);
  const queueOptions = options.queues.get(queue);
  if (!queueOptions) throw new Error(AwaMessages.enqueueQueueUnknown(String(queue), [...options.queues.keys()]));

  const priority = item.priority ?? 0;
  if (!Number.isInteger(priority) || priority < PRIORITY_MIN || priority > PRIORITY_MAX) {
    throw new Error(AwaMessages.enqueuePriorityInvalid(PRIORITY_MIN, PRIORITY_MAX));
  }
  const maxAttempts = item.maxAttempts ?? queueOptions.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000_000) {
    throw new Error(AwaMessages.enqueueMaxAttemptsInvalid());
  }
  let runAt = 'null';
  if (item.runAt !== undefined) {
    const t = item.runAt instanceof Date ? item.runAt.getTime() : NaN;
    if (Number.isNaN(t) || t < EARLIEST_RUN_AT || t > LATEST_RUN_AT) throw new Error(AwaMessages.enqueueRunAtInvalid());
    runAt = JSON.stringify(item.runAt.toISOString());
  }
  const args = encodeArgs(item.args, options.maxArgsBytes);
  return {
    queue,
    json: `{"kind":${JSON.stringify(kind)},"queue":${JSON.stringify(queue)},"args":${args},` +
      `"priority":${priority},"max_attempts":${maxAttempts},"run_at":${runAt}}`,
  };
}

function encodeArgs(args: unknown, maxBytes: number): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(args);
  } catch (error) {
    // BigInt values and circular structures land here.
    throw new Error(AwaMessages.enqueueArgsInvalid(error instanceof Error ? error.message : String(error)));
  }
  if (json === undefined) throw new Error(AwaMessages.enqueueArgsInvalid(`${typeof args} is not a JSON value`));
  // PostgreSQL's jsonb holds neither the NUL character nor half a surrogate pair.
  const unstorable = unstorableInJson(json);
  if (unstorable === 'nul') throw new Error(AwaMessages.enqueueArgsInvalid('strings must not contain the NUL character (\\u0000)'));
  if (unstorable === 'surrogate') {
    throw new Error(AwaMessages.enqueueArgsInvalid('strings must not contain a lone UTF-16 surrogate (a string cut in the middle of a character)'));
  }
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) throw new Error(AwaMessages.enqueueArgsTooLarge(bytes, maxBytes));
  return json;
}
