// The second server's part of a chaos worker process (--second-server): a DataSource to that server and
// a named AwaModule on it with one queue, and that queue's handlers. The durable-event group `chaos`
// (in chaos-worker.ts, on every queue) runs in this module's database as well.
import { Injectable, type DynamicModule } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, JobHandler, type Job } from 'nestjs-awa';
import { SECOND_DATA_SOURCE, SECOND_KINDS, SECOND_QUEUE, secondAwaOptions, type ChaosArgs } from './chaos-config.js';
import { countOnce, RunRecorder } from './chaos-recorder.js';

/** The DataSource to the second server and the module on it. */
export function secondServerModules(url: string): DynamicModule[] {
  return [
    TypeOrmModule.forRoot({ name: SECOND_DATA_SOURCE, type: 'postgres', url, autoLoadEntities: true, logging: false }),
    AwaModule.forRoot(secondAwaOptions()),
  ];
}

/** Run like the first server's quick, slow and counted jobs, and recorded in the second server. */
@Injectable()
export class SecondServerHandlers {
  constructor(private readonly runs: RunRecorder) {}

  @JobHandler(SECOND_KINDS.quick, { queue: SECOND_QUEUE })
  async quick(job: Job<ChaosArgs>) {
    await this.runs.work(job);
  }

  @JobHandler(SECOND_KINDS.slow, { queue: SECOND_QUEUE })
  async slow(job: Job<ChaosArgs>) {
    await this.runs.work(job);
  }

  @JobHandler(SECOND_KINDS.counted, { queue: SECOND_QUEUE })
  async counted(job: Job<ChaosArgs>) {
    await countOnce(this.runs, job);
  }
}
