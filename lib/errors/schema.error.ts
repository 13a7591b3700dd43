import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/** The awa schema is missing, or `pending` migrations are not applied. */
export class SchemaError extends AwaError {
  constructor(
    message: string,
    readonly pending: readonly string[] = [],
  ) {
    super(AwaErrorCodes.schema, message);
  }
}
