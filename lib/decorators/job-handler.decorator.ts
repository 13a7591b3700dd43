import { SetMetadata } from '@nestjs/common';
import { DEFAULT_QUEUE, JOB_HANDLER_METADATA } from '../awa.constants.js';

export interface JobHandlerOptions {
  /** The queue this kind's jobs go to and are claimed from. Default 'default'. */
  queue?: string;
}

export interface JobHandlerMetadata {
  kind: string;
  queue: string;
}

/**
 * Marks a provider method as the handler of one job kind. The method receives a `Job<TArgs>`;
 * returning means completed, throwing means retry (or failed once attempts are spent).
 */
export function JobHandler(kind: string, options: JobHandlerOptions = {}): MethodDecorator {
  const metadata: JobHandlerMetadata = { kind, queue: options.queue ?? DEFAULT_QUEUE };
  return SetMetadata(JOB_HANDLER_METADATA, metadata);
}
