import type { AwaErrorCode } from './awa-error-codes.js';

/** Base class of every error nestjs-awa throws. `code` is stable across releases; the message is for humans. */
export class AwaError extends Error {
  constructor(
    readonly code: AwaErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}
