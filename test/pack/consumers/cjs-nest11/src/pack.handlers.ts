import { Injectable } from '@nestjs/common';
import { JobHandler, type Job } from 'nestjs-awa';
import { setTimeout as sleep } from 'node:timers/promises';
import { say } from './consumer.options';

@Injectable()
export class PackHandlers {
  @JobHandler('pack.work', { queue: 'pack' })
  async work(job: Job<{ ms: number }>): Promise<void> {
    say(`START ${job.id} ${job.attempt}`);
    await sleep(job.args.ms, undefined, { signal: job.signal });
    say(`DONE ${job.id} ${job.attempt}`);
  }
}
