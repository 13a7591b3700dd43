import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * A QueueAdmin call refused before the database was touched. `field` names the input at fault:
 * `name` (a queue name), `filter.states[1]`, `filter.createdAfter`, `page.limit`, ...
 */
export class AdminValidationError extends AwaError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(AwaErrorCodes.adminValidation, message);
  }
}
