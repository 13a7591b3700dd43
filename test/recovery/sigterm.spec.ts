import type { TestingModule } from '@nestjs/testing';
import pg from 'pg';
import { QueueProducer, RescueErrors } from 'nestjs-awa';
import { DataSource } from 'typeorm';
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
      state: 'available', attempt: 0,
      errors: [expect.objectContaining({ attempt: 1, error: RescueErrors.releasedOnShutdown })],
    });
    const dataSource = app.get(DataSource);
    expect(await dataSource.query('SELECT * FROM awa.active_leases')).toEqual([]);
    const instances = await dataSource.query('SELECT pid FROM awa.instances');
    expect(instances.map((i: { pid: number }) => i.pid)).not.toContain(worker.pid);
    // Released at once: it is claimable again right away, by anyone.
    await waitFor(async () => (await producer.getJob(long.id))?.state === 'available');
  });

  it('gives back at once what a claim in flight returns after SIGTERM: no handler starts, no lease is left', async () => {
    // A test-only trigger holds every claim at a gate (an advisory lock this test holds), so the
    // claim is deterministically in flight when the signal arrives.
    const GATE = 4712;
    // Jobs left over from other tests are out of play: the gated worker must find only this test's.
    await queryOnce(db.url, `UPDATE awa.jobs SET state = 'cancelled', finalized_at = now() WHERE state <> 'completed'`);
    await queryOnce(db.url, `
      CREATE FUNCTION public.claim_gate() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN PERFORM pg_advisory_lock_shared(${GATE}); PERFORM pg_advisory_unlock_shared(${GATE}); RETURN NULL; END $$;
      CREATE TRIGGER claim_gate BEFORE INSERT ON awa.active_leases FOR EACH STATEMENT EXECUTE FUNCTION public.claim_gate()`);
    const gate = new pg.Client({ connectionString: db.url });
    await gate.connect();
    const gated = new WorkerProcess(db.url, {
      ...FAST_OPTIONS, queues: { default: { ...FAST_OPTIONS.queues!.default, concurrency: 1, prefetch: 3 } },
    });
    try {
      await gated.ready();
      await gate.query('SELECT pg_advisory_lock($1)', [GATE]);
      const jobs = await app.get(QueueProducer).enqueueMany(Array.from({ length: 4 }, () => ({ kind: 'fixture.sleep', args: { ms: 10 } })));
      await waitFor(async () => (await queryOnce<{ n: number }>(db.url,
        `SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1 AND NOT granted`, [GATE]))[0]!.n >= 1);

      gated.kill('SIGTERM');
      await gated.waitForLine(/^SIGTERM$/);
      await gate.query('SELECT pg_advisory_unlock($1)', [GATE]);
      expect(await gated.exit()).toEqual({ code: null, signal: 'SIGTERM' });

      expect(gated.lines.filter((l) => l.startsWith('START '))).toEqual([]);
      const dataSource = app.get(DataSource);
      expect(await dataSource.query('SELECT * FROM awa.active_leases')).toEqual([]);
      const rows = await dataSource.query('SELECT state, attempt FROM awa.jobs WHERE id = ANY($1) ORDER BY id', [jobs.map((j) => j.id)]);
      expect(rows).toEqual(jobs.map(() => ({ state: 'available', attempt: 0 })));
    } finally {
      gated.kill('SIGKILL');
      await gate.end();
      await queryOnce(db.url, 'DROP TRIGGER claim_gate ON awa.active_leases; DROP FUNCTION public.claim_gate()');
    }
  });
});
