import { AwaMessages } from '../awa.messages.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/** A bad module, queue or enqueue option. `path` names it, e.g. `queues.emails.concurrency`. */
export class AwaOptionError extends AwaError {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(AwaErrorCodes.invalidOption, AwaMessages.invalidOption(path, problem));
  }
}
