import type { TestingModule } from '@nestjs/testing';
import { QueueProducer, type AwaModuleOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';
import { maxInWindow } from './flow-fixture.js';

const LIMIT = 40;
const PERIOD = 1_000;
const JOBS = 300;

/**
 * The rate limit as the README states it: at most `limit` handler starts in any window of `period`,
 * summed over all instances, a start being the moment the handler is entered. Each of 3 worker
 * processes prints Date.now() as its handler's first statement (one machine clock, the database's too);
 * one of them has its event loop kept busy (spins of 30-80 ms), so its claims are dispatched late.
 */
describe.each([0, 20])('a rate limit at handler entry across 3 worker processes, prefetch %i', (prefetch) => {
  let db: TestDatabase;
  let app: TestingModule;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url }); // produces and leads maintenance; no handlers
    const options: AwaModuleOptions = {
      ...FAST_OPTIONS,
      queues: {
        default: {
          ...FAST_OPTIONS.queues!.default,
          concurrency: 20,
          prefetch,
          rateLimit: { limit: LIMIT, period: PERIOD },
        },
      },
    };
    for (let i = 0; i < 3; i++)
      workers.push(new WorkerProcess(db.url, options, i === 0 ? { AWA_BUSY_MS: '30-80' } : {}));
    await Promise.all(workers.map((w) => w.ready()));
  }, 120_000);
  afterAll(async () => {
    workers.forEach((w) => w.kill('SIGKILL'));
    await Promise.all(workers.splice(0).map((w) => w.exit()));
    await app?.close();
    await db?.drop();
  });

  it(`enters no more than ${LIMIT} handlers in any ${PERIOD} ms window, also with one event loop kept busy`, async () => {
    await app.get(QueueProducer).enqueueMany(Array.from({ length: JOBS }, () => ({ kind: 'fixture.enter', args: {} })));
    await waitFor(
      async () =>
        (await app.get(DataSource).query(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'completed'`))[0]
          .n === JOBS,
      60_000,
      `${JOBS} completed jobs`,
    );
    const enterLines = () => workers.flatMap((w) => w.lines.filter((l) => l.startsWith('ENTER ')));
    // Each ENTER line is written before its job's completion, but this process reads the workers'
    // pipes when its event loop gets to them: the last lines may still be on the way.
    await waitFor(() => enterLines().length >= JOBS, 10_000, `${JOBS} ENTER lines read`);
    const entries = enterLines().map((l) => l.split(' '));
    // Each job was entered once: a job given back unstarted never ran its handler.
    expect(new Set(entries.map(([, id]) => id)).size).toBe(JOBS);
    expect(entries).toHaveLength(JOBS);
    expect(
      maxInWindow(
        entries.map(([, , at]) => Number(at)),
        PERIOD,
      ),
    ).toBeLessThanOrEqual(LIMIT);
  }, 90_000);
});
