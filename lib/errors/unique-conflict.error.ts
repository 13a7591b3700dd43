import { UniqueMessages } from '../awa.messages.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * A unique job conflicted `rounds` times in a row with a job that left its blocking states before it
 * could be read (a very busy key). Nothing was enqueued for it; the call may be retried.
 * From enqueueGraph/enqueueFlow (`graph` given): a unique job of the workflow, `ref`, conflicted with
 * a job holding its key, and nothing of the workflow was enqueued (`rounds` 1); from retryWorkflow
 * (`retry`), nothing of it was retried.
 */
export class UniqueConflictError extends AwaError {
  /** The ref of the workflow job whose key is held (enqueueGraph); else undefined. */
  readonly ref: string | undefined;

  constructor(
    readonly rounds: number,
    graph?: { ref: string | undefined; cause: unknown; retry?: boolean },
  ) {
    super(
      AwaErrorCodes.uniqueConflict,
      graph ? UniqueMessages.graphConflict(graph.ref, graph.retry === true) : UniqueMessages.unresolved(rounds),
      graph && { cause: graph.cause },
    );
    this.ref = graph?.ref;
  }
}
