import type { TestingModule } from '@nestjs/testing';
import { QueueProducer, RescueErrors } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createStatementGate } from '../support/statement-gate.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';

/** SIGTERM on a real process (enableShutdownHooks): drain, release, deregister, exit by itself. */
describe('a worker process sent SIGTERM', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let worker: WorkerProcess | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url });
  });
  afterAll(async () => {
    worker?.kill('SIGKILL');
    await app?.close();
    await db?.drop();
  });

  it('finishes what it can, releases the rest without spending an attempt, and exits', async () => {
    worker = new WorkerProcess(db.url, { ...FAST_OPTIONS, shutdownTimeout: 1_000 });
    await worker.ready();
    const producer = app.get(QueueProducer);
    const short = await producer.enqueue('fixture.sleep', { ms: 300 });
    const long = await producer.enqueue('fixture.sleep', { ms: 120_000 });
    await worker.waitForLine(new RegExp(`^START ${short.id} `));
    await worker.waitForLine(new RegExp(`^START ${long.id} `));

    worker.kill('SIGTERM');
    // Nest's shutdown hooks close the app, then re-raise the signal: the process ends by itself.
    expect(await worker.exit()).toEqual({ code: null, signal: 'SIGTERM' });
    expect(worker.stderr).toBe('');

    expect(await worker.waitForLine(new RegExp(`^ABORT ${long.id} shutdown timeout`))).toBeTruthy();
    expect(await producer.getJob(short.id)).toMatchObject({ state: 'completed', attempt: 1 });
    expect(await producer.getJob(long.id)).toMatchObject({
      state: 'available',
      attempt: 0,
      errors: [expect.objectContaining({ attempt: 1, error: RescueErrors.releasedOnShutdown })],
    });
    const dataSource = app.get(DataSource);
    expect(await dataSource.query('SELECT * FROM awa.active_leases')).toEqual([]);
    const instances = await dataSource.query('SELECT pid FROM awa.instances');
    expect(instances.map((i: { pid: number }) => i.pid)).not.toContain(worker.pid);
    // Released at once: it is claimable again right away, by anyone.
    await waitFor(async () => (await producer.getJob(long.id))?.state === 'available');
  });

  it(
    'gives back at once what a claim in flight returns after ' + 'SIGTERM: no handler starts, no lease is left',
    async () => {
      // A test-only trigger holds every claim at a gate (an advisory lock this test holds), so the
      // claim is deterministically in flight when the signal arrives.
      const GATE = 4712;
      // Jobs left over from other tests are out of play: the gated worker must find only this test's.
      await queryOnce(
        db.url,
        `UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE state <> 'completed'`,
      );
      const gate = await createStatementGate(db.url, GATE, 'INSERT', 'awa.active_leases');
      const gated = new WorkerProcess(db.url, {
        ...FAST_OPTIONS,
        queues: { default: { ...FAST_OPTIONS.queues!.default, concurrency: 1, prefetch: 3 } },
      });
      try {
        await gated.ready();
        await gate.close();
        const jobs = await app
          .get(QueueProducer)
          .enqueueMany(Array.from({ length: 4 }, () => ({ kind: 'fixture.sleep', args: { ms: 10 } })));
        await waitFor(async () => (await gate.waiting()) >= 1);

        gated.kill('SIGTERM');
        await gated.waitForLine(/^SIGTERM$/);
        await gate.open();
        expect(await gated.exit()).toEqual({ code: null, signal: 'SIGTERM' });

        expect(gated.lines.filter((l) => l.startsWith('START '))).toEqual([]);
        const dataSource = app.get(DataSource);
        expect(await dataSource.query('SELECT * FROM awa.active_leases')).toEqual([]);
        const rows = await dataSource.query('SELECT state, attempt FROM awa.all_jobs WHERE id = ANY($1) ORDER BY id', [
          jobs.map((j) => j.id),
        ]);
        expect(rows).toEqual(jobs.map(() => ({ state: 'available', attempt: 0 })));
      } finally {
        gated.kill('SIGKILL');
        await gate.remove();
      }
    },
  );
});
