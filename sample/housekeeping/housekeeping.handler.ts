import { Injectable, Logger } from '@nestjs/common';
import { JobHandler, Periodic, type Job } from 'nestjs-awa';

/** A periodic job: enqueued once per fire time by the maintenance leader, whatever the replica count. */
@Injectable()
export class HousekeepingHandler {
  private readonly logger = new Logger(HousekeepingHandler.name);

  @JobHandler('housekeeping.tick')
  @Periodic('0 * * * * *', { args: { note: 'every minute, on one instance only' } })
  tick(job: Job<{ note: string }>): { firedAt: string } {
    this.logger.log(`job ${job.id}: housekeeping (${job.args.note})`);
    return { firedAt: new Date().toISOString() }; // stored as the job's output
  }
}
