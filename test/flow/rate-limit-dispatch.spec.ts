import { Injectable } from '@nestjs/common';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { RescueErrors } from '../../lib/awa.messages.js';
import { rateEntryWait } from '../../lib/worker/prefetch-limits.js';
import { useTestApp } from '../support/block-app.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';

const RATE = { limit: 10, period: 1_000 };
/**
 * Far longer than the entry wait (25 ms here, lengthened to twice a claim's round trip where that is
 * longer): a claim's next job cannot be entered in time after this handler.
 */
const SPIN_MS = 12 * rateEntryWait(RATE, 0);

@Injectable()
class StallingHandlers {
  /** Keeps the event loop busy, synchronously, for SPIN_MS after it was entered. */
  @JobHandler('flow.stall', { queue: 'stalled' })
  stall() {
    const until = performance.now() + SPIN_MS;
    while (performance.now() < until); // busy on purpose
  }
}

describe('a rate-limited queue without prefetch, its event loop stalled between two starts', () => {
  const block = useTestApp({
    providers: [StallingHandlers],
    awa: {
      queues: { ...FAST_OPTIONS.queues, stalled: { concurrency: 3, prefetch: 0, rateLimit: RATE, pollInterval: 200 } },
    },
  });

  it('gives back unstarted, without spending an attempt, the claimed jobs it could not enter in time', async () => {
    await block.app.get(QueueProducer).enqueueMany(Array.from({ length: 3 }, () => ({ kind: 'flow.stall', args: {} })));
    const done = await waitFor(async () => {
      const rows = await block.app
        .get(DataSource)
        .query(`SELECT attempt, errors FROM awa.all_jobs WHERE kind = 'flow.stall' AND state = 'completed'`);
      return rows.length === 3 ? rows : null;
    }, 20_000);
    // The first claim took 3 jobs for 3 slots; the first handler's spin outlasted the others' entry wait.
    expect(done.every((j: { attempt: number }) => j.attempt === 1)).toBe(true);
    const givenBack = done.filter((j: { errors: unknown[] }) =>
      JSON.stringify(j.errors).includes(RescueErrors.releasedUnstarted),
    );
    expect(givenBack.length).toBeGreaterThan(0);
  }, 30_000);
});
