import { Injectable, Logger } from '@nestjs/common';
import { JobHandler, type Job } from 'nestjs-awa';
import { setTimeout as sleep } from 'node:timers/promises';

export interface SendEmailArgs {
  to: string;
  subject: string;
}

@Injectable()
export class EmailHandler {
  private readonly logger = new Logger(EmailHandler.name);

  /** Quick work on the 'emails' queue, whose short deadline catches a hung mail server. */
  @JobHandler('email.send', { queue: 'emails' })
  async send(job: Job<SendEmailArgs>): Promise<void> {
    await sleep(200, undefined, { signal: job.signal }); // stands in for the SMTP call
    // A way to watch retries and errors: addresses at fail.test always bounce.
    if (job.args.to.endsWith('@fail.test')) throw new Error(`mailbox ${job.args.to} unavailable`);
    this.logger.log(`job ${job.id}: sent "${job.args.subject}" to ${job.args.to} (attempt ${job.attempt})`);
  }
}
