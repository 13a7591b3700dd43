import { BadRequestException, Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { EnqueueValidationError } from 'nestjs-awa';

/**
 * QueueProducer refuses bad input (unknown queue, invalid runAt, priority out of range...) with an
 * EnqueueValidationError. That is the client's mistake: answer 400, naming the field at fault.
 * Everything else (a database outage, a bug) goes to Nest's default handling: 500.
 */
@Catch()
export class EnqueueErrorFilter extends BaseExceptionFilter {
  override catch(error: unknown, host: ArgumentsHost): void {
    if (!(error instanceof EnqueueValidationError)) return super.catch(error, host);
    const { message, code, field } = error;
    super.catch(new BadRequestException({ statusCode: 400, error: 'Bad Request', message, code, field }), host);
  }
}
