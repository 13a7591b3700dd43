import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * An enqueue call refused before the database was touched. `field` names the input at fault
 * (`kind`, `queue`, `args`, `priority`, ...); `index` is the item's position in enqueueMany.
 */
export class EnqueueValidationError extends AwaError {
  constructor(
    readonly field: string,
    message: string,
    readonly index?: number,
  ) {
    super(AwaErrorCodes.enqueueValidation, message);
  }
}
