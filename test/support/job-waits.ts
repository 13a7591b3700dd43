import type { JobRecord, QueueProducer } from 'nestjs-awa';
import { waitFor } from './wait-for.js';

const FINAL_STATES: readonly string[] = ['completed', 'failed', 'cancelled'];

/** The job once it has finished (completed, failed or cancelled), as getJob reads it. */
export function finishedJob(producer: QueueProducer, id: string): Promise<JobRecord> {
  return waitFor(
    async () => {
      const job = await producer.getJob(id);
      return job && FINAL_STATES.includes(job.state) ? job : null;
    },
    20_000,
    `job ${id} to finish`,
  );
}
