import { BadRequestException, Catch, HttpException, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';

/**
 * QueueProducer rejects bad input (unknown queue, invalid runAt, priority out of range...) with a
 * plain Error whose message starts with "nestjs-awa:". That is the client's mistake: answer 400.
 */
@Catch()
export class EnqueueErrorFilter extends BaseExceptionFilter {
  override catch(error: unknown, host: ArgumentsHost): void {
    const isEnqueueError = error instanceof Error && !(error instanceof HttpException) && error.message.startsWith('nestjs-awa:');
    super.catch(isEnqueueError ? new BadRequestException(error.message) : error, host);
  }
}
