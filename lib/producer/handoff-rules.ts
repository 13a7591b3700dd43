import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import type { EncodedJob } from './enqueue-validator.js';

/**
 * The most args bytes a handed-off job may have: the handoff's NOTIFY carries them, and a NOTIFY
 * payload must stay under 8,000 bytes. PostgreSQL prints jsonb with a space after each `:` and `,`
 * (at most 1.5 times the JSON given, for `[0,0,...]`), and the rest of the payload (kind, queue,
 * trace context, numbers) is under 1,000 bytes.
 */
export const HANDOFF_MAX_ARGS_BYTES = 4_000;

/**
 * @internal Whether enqueue() may hand job `e` to an idle worker (docs/handoff.md): its queue has
 * `handoff`, and the job runs now, has no concurrency key and no unique key, and its args fit a
 * NOTIFY. (enqueue() also keeps it out of a caller's transaction.)
 */
export function handsOff(e: EncodedJob, options: ResolvedAwaOptions): boolean {
  return (
    !!options.queues.get(e.queue)?.handoff &&
    e.runAt === 'null' &&
    e.concurrencyKey === undefined &&
    e.unique === undefined &&
    Buffer.byteLength(e.args) <= HANDOFF_MAX_ARGS_BYTES
  );
}
