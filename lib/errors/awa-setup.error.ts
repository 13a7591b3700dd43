import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/** The host app is not set up for nestjs-awa (DataSource, driver, ScheduleModule, entities). */
export class AwaSetupError extends AwaError {
  constructor(message: string) {
    super(AwaErrorCodes.setup, message);
  }
}
