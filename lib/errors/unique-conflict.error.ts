import { UniqueMessages } from '../awa.messages.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * A unique job conflicted `rounds` times in a row with a job that left its blocking states before it
 * could be read (a very busy key). Nothing was enqueued for it; the call may be retried.
 */
export class UniqueConflictError extends AwaError {
  constructor(readonly rounds: number) {
    super(AwaErrorCodes.uniqueConflict, UniqueMessages.unresolved(rounds));
  }
}
