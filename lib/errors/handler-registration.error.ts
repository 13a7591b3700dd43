import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/** A @JobHandler that cannot be registered; `handler` is `Class.method`. */
export class HandlerRegistrationError extends AwaError {
  constructor(
    readonly handler: string,
    message: string,
  ) {
    super(AwaErrorCodes.handlerRegistration, message);
  }
}
