import { Catch, HttpException, HttpStatus, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AwaErrorCodes } from '../errors/awa-error-codes.js';
import { AwaError } from '../errors/awa.error.js';
import { AwaDashboardMessages } from './dashboard.messages.js';

/** AwaError codes that mean the request was wrong, not the server: bad options and every *_VALIDATION. */
const isClientError = (code: string) => code === AwaErrorCodes.invalidOption || code.endsWith('_VALIDATION');

/**
 * Every error of the dashboard as JSON `{ statusCode, message }`. Nest's HTTP errors keep their
 * status; a typed AwaError about the input is a 400 with its message; anything else (a PostgreSQL
 * error among them) is logged and answered with a plain 500 that leaks nothing.
 * @internal
 */
@Catch()
export class DashboardExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('AwaDashboard');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: unknown, host: ArgumentsHost): void {
    const response: unknown = host.switchToHttp().getResponse();
    let status: number = HttpStatus.INTERNAL_SERVER_ERROR;
    let message: string = AwaDashboardMessages.internalError();
    if (error instanceof HttpException) {
      status = error.getStatus();
      const body = error.getResponse();
      message = typeof body === 'string' ? body : String((body as { message?: unknown }).message ?? error.message);
    } else if (error instanceof AwaError && isClientError(error.code)) {
      status = HttpStatus.BAD_REQUEST;
      message = error.message;
    } else {
      this.logger.error(AwaDashboardMessages.actionFailed('request', String(error)));
    }
    this.adapterHost.httpAdapter.reply(response, { statusCode: status, message }, status);
  }
}
