import type { Provider } from '@nestjs/common';
import { WORKER_WAKEUP, type WorkerWakeup } from '../interfaces/worker-wakeup.interface.js';
import { WorkerService } from './worker.service.js';

/** The worker side of the producer's wake-up port: WorkerService wakes the queue's claim loop. */
export const workerWakeupProvider: Provider = {
  provide: WORKER_WAKEUP,
  useFactory: (workers: WorkerService): WorkerWakeup => workers,
  inject: [WorkerService],
};
