import { AwaMessages } from '../awa.messages.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/**
 * A statement of the queue's own (e.g. an enqueue's insert) ran longer than the option
 * statementTimeout (`timeoutMs`) and was stopped on the server. `cause` is the driver's error.
 */
export class StatementTimeoutError extends AwaError {
  constructor(
    readonly statement: string,
    readonly timeoutMs: number,
    options?: ErrorOptions,
  ) {
    super(AwaErrorCodes.statementTimeout, AwaMessages.statementTimedOut(statement, timeoutMs), options);
  }
}
