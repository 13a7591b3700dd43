import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/** A test helper's expectation failed (AwaTesting.expectEnqueued); the message lists what was found. */
export class AwaAssertionError extends AwaError {
  constructor(message: string) {
    super(AwaErrorCodes.assertion, message);
  }
}
