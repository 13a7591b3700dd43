import type { TestingModule } from '@nestjs/testing';
import { QueueProducer } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { TcpProxy } from '../support/tcp-proxy.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';

const isSession = (first: string) => first.includes('awa:');

/**
 * A live worker process loses only its session connection (the server, a NAT or a load balancer
 * resets it) while its pool keeps working. Its running jobs must stay its own: the leader must not
 * count it dead in the moment before it reconnects.
 */
/**
 * Room for a reconnect under CI's load: past heartbeatStaleAfter without its session, a worker
 * aborts its handlers itself (their leases may have been rescued), which is not what this tests.
 * FAST_OPTIONS' 1 s was once exceeded on a loaded CI machine: the jobs completed, their handlers aborted.
 */
const STALE_AFTER_MS = 5_000;

describe('a worker process whose session connection is reset while its pool keeps working', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let proxy: TcpProxy;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The test's app leads maintenance (orphan sweep every 200 ms) and has no handlers.
    app = await startTestApp({ url: db.url, awa: { heartbeatStaleAfter: STALE_AFTER_MS } });
    const u = new URL(db.url);
    proxy = await TcpProxy.start({ host: u.hostname, port: Number(u.port) });
  });
  afterAll(async () => {
    worker?.kill('SIGKILL');
    await worker?.exit();
    await proxy?.close();
    await app?.close();
    await db?.drop();
  });

  it('keeps its running jobs: none is rescued, none runs twice', async () => {
    // Every connection of the worker goes through the proxy; only its session's is reset.
    worker = new WorkerProcess(TcpProxy.url(db.url, proxy), {
      ...FAST_OPTIONS,
      heartbeatStaleAfter: STALE_AFTER_MS,
      queues: { default: { ...FAST_OPTIONS.queues!.default, concurrency: 3 } },
    });
    await worker.ready();
    const producer = app.get(QueueProducer);
    const jobs = await producer.enqueueMany(
      Array.from({ length: 3 }, () => ({ kind: 'fixture.sleep', args: { ms: 5_000 } })),
    );
    for (const { id } of jobs) await worker.waitForLine(new RegExp(`^START ${id} 1 `));

    for (let reset = 0; reset < 3; reset++) {
      const opened = proxy.opened(isSession);
      expect(proxy.reset(isSession)).toBe(1);
      await waitFor(
        () => proxy.opened(isSession) > opened && proxy.count(isSession) === 1,
        10_000,
        'the session to reconnect',
      );
    }

    for (const { id } of jobs) await worker.waitForLine(new RegExp(`^DONE ${id}$`), 30_000);
    for (const { id } of jobs) {
      const job = await waitFor(
        async () => {
          const j = await producer.getJob(id);
          return j?.state === 'completed' ? j : null;
        },
        20_000,
        `completion of job ${id}`,
      );
      expect(job).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
    }
    const runs = await app
      .get(DataSource)
      .query('SELECT job_id::text AS id, attempt, pid FROM fixture_runs ORDER BY job_id');
    expect(runs).toEqual(jobs.map(({ id }) => ({ id, attempt: 1, pid: worker!.pid })));
    expect(worker.lines.filter((l) => l.startsWith('ABORT '))).toEqual([]);
  });
});
