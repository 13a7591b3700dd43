import { Injectable } from '@nestjs/common';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { rateEntryWait } from '../../lib/worker/prefetch-limits.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { useBlockApp } from '../support/block-app.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { maxInWindow } from './flow-fixture.js';

const RATE = { limit: 10, period: 1_000 };
const JOBS = 25;
/** Each way: a claim's round trip takes at least twice this, longer than the first entry wait. */
const LATENCY_MS = rateEntryWait(RATE, 0);

@Injectable()
class EnteringHandlers {
  readonly entries: number[] = [];

  @JobHandler('flow.far', { queue: 'far' })
  enter() {
    this.entries.push(Date.now());
  }
}

/**
 * A rate-limited queue whose database is far away: every claim's round trip is longer than the entry
 * wait a claim starts with (period / 40). With a fixed wait every claimed job went back unstarted and
 * the queue never ran a job (on a loaded CI machine too); the wait now lengthens to fit the claims'
 * round trip (after a give-back, or at once from a claim's round trip).
 */
describe('a rate-limited queue whose claims take longer than its first entry wait', () => {
  let proxy: TcpProxy;
  const block = useBlockApp(async (url) => {
    const u = new URL(url);
    proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port) });
    return startTestApp({
      url: TcpProxy.url(url, proxy),
      providers: [EnteringHandlers],
      awa: {
        queues: {
          ...FAST_OPTIONS.queues,
          far: { concurrency: 5, prefetch: 0, rateLimit: RATE, pollInterval: 200 },
        },
      },
    });
  });
  afterAll(() => proxy?.close()); // after the block's own: the app closes through it first

  it('still runs every job, each once, and keeps the limit at handler entry', async () => {
    proxy.latency(LATENCY_MS); // after the boot: the migrations need not crawl
    await block.app
      .get(QueueProducer)
      .enqueueMany(Array.from({ length: JOBS }, () => ({ kind: 'flow.far', args: {} })));
    const done = await waitFor(
      async () => {
        const rows = await block.app
          .get(DataSource)
          .query(`SELECT attempt FROM awa.all_jobs WHERE kind = 'flow.far' AND state = 'completed'`);
        return rows.length === JOBS ? (rows as { attempt: number }[]) : null;
      },
      60_000,
      `${JOBS} completed jobs`,
    );
    const { entries } = block.app.get(EnteringHandlers);
    expect(entries).toHaveLength(JOBS);
    expect(maxInWindow(entries, RATE.period)).toBeLessThanOrEqual(RATE.limit);
    // A claim whose jobs went back (its round trip outlasted its wait) spent no attempt.
    expect(done.every((j) => j.attempt === 1)).toBe(true);
  }, 90_000);
});
