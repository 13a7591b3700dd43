import { ScheduleMessages } from '../awa.messages.js';
import { AwaErrorCodes } from './awa-error-codes.js';
import { AwaError } from './awa.error.js';

/** JobSchedules was given the name of a schedule that does not exist. */
export class ScheduleNotFoundError extends AwaError {
  constructor(readonly scheduleName: string) {
    super(AwaErrorCodes.scheduleNotFound, ScheduleMessages.notFound(scheduleName));
  }
}
