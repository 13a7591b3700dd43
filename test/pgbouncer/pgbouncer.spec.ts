import type { TestingModule } from '@nestjs/testing';
import { MaintenanceService, QueueProducer, RescueErrors, type AwaModuleOptions } from 'nestjs-awa';
import { seedRunning } from '../support/job-factory.js';
import { PgBouncer, pgbouncerMissing } from '../support/pgbouncer.js';
import { adminUrl, createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';

const missing = pgbouncerMissing();
if (missing) process.stdout.write(`[awa tests] PgBouncer tests skipped: ${missing}\n`);
const describeWithBouncer = missing ? describe.skip : describe;

/**
 * Liveness is the instance row's heartbeat here: 4 s rather than FAST_OPTIONS' 1 s, so that a live
 * worker on a loaded machine is not taken for dead (and its jobs run twice).
 */
const POOLER: AwaModuleOptions = { ...FAST_OPTIONS, heartbeatStaleAfter: 4_000, connectionMode: 'transaction-pooler' };

/**
 * The whole queue behind a real PgBouncer (Debian's, 1.18 on Debian 12) in transaction mode, with
 * real worker processes: every statement of the app and of the workers goes through the pooler.
 */
describeWithBouncer('behind PgBouncer in transaction mode, with connectionMode transaction-pooler', () => {
  let db: TestDatabase;
  let bouncer: PgBouncer;
  let app: TestingModule;
  const workers: WorkerProcess[] = [];
  const killed = new Set<WorkerProcess>();
  const sigkill = async (w: WorkerProcess) => {
    killed.add(w);
    w.kill('SIGKILL');
    await w.exit();
  };
  /** Checks straight on PostgreSQL, around the pooler. */
  const direct = <T = any>(sql: string, params: unknown[] = []) => queryOnce<T>(db.url, sql, params);
  const worker = (options: AwaModuleOptions = POOLER) => {
    const w = new WorkerProcess(bouncer.urlFor(db.url), options);
    workers.push(w);
    return w;
  };
  const completed = (producer: QueueProducer, id: string) =>
    waitFor(
      async () => {
        const job = await producer.getJob(id);
        return job?.state === 'completed' ? job : null;
      },
      30_000,
      `completion of job ${id}`,
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    bouncer = await PgBouncer.start(adminUrl());
    app = await startTestApp({ url: bouncer.urlFor(db.url), awa: POOLER });
    // The test's own app only produces: leadership stays with the worker processes, which the test kills.
    await app.get(MaintenanceService).stop();
  });
  afterAll(async () => {
    workers.forEach((w) => w.kill('SIGKILL'));
    await Promise.all(workers.map((w) => w.exit()));
    await app?.close();
    await bouncer?.stop();
    await db?.drop();
  });

  it('enqueues, claims and completes every job once, holding no session lock', async () => {
    await worker().ready();
    const producer = app.get(QueueProducer);
    const one = await producer.enqueue('fixture.sleep', { ms: 1 });
    const many = await producer.enqueueMany(
      Array.from({ length: 30 }, () => ({ kind: 'fixture.sleep', args: { ms: 5 } })),
    );
    for (const { id } of [one, ...many]) await completed(producer, id);
    const runs = await direct<{ n: number }>('SELECT count(*)::int AS n FROM fixture_runs GROUP BY job_id');
    expect(runs).toHaveLength(31);
    expect(runs.every((r) => r.n === 1)).toBe(true);
    // Nothing session-scoped: an advisory lock would sit on whichever server backend the pooler picked.
    const locks = await direct(
      `SELECT objid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
                                 WHERE l.locktype = 'advisory' AND d.datname = $1`,
      [db.name],
    );
    expect(locks).toEqual([]);
  });

  it('rescues the job of a SIGKILLed worker, and another worker completes it', async () => {
    const victim = worker({ ...POOLER, queues: { default: { ...POOLER.queues!.default, concurrency: 1 } } });
    await victim.ready();
    const producer = app.get(QueueProducer);
    const { id } = await producer.enqueue('fixture.sleep', { ms: 60_000 });
    const started = await waitFor(
      () => workers.find((w) => w.lines.some((l) => l.startsWith(`START ${id} 1 `))),
      20_000,
      'the start',
    );
    await sigkill(started); // the victim, or the first test's worker if that one took the job
    await direct(`UPDATE awa.jobs SET args = '{"ms": 10}' WHERE id = $1`, [id]);
    worker(); // a survivor, whichever was killed

    const done = await completed(producer, id);
    expect(done.attempt).toBe(2);
    expect(done.errors).toEqual([expect.objectContaining({ attempt: 1 })]);
    expect(done.errors[0]!.error).toMatch(new RegExp(`^(worker instance died: |${RescueErrors.heartbeatStale})`));
    const runs = await direct<{ attempt: number; pid: number }>(
      'SELECT attempt, pid FROM fixture_runs WHERE job_id = $1',
      [id],
    );
    expect(runs).toHaveLength(1);
    expect(runs[0]!.attempt).toBe(2);
    expect(runs[0]!.pid).not.toBe(started.pid);
  });

  it('when the leader is SIGKILLed, another worker takes the lease with a higher term and sweeps', async () => {
    const live = workers.filter((w) => !killed.has(w));
    while (live.length < 2) live.push(worker());
    await Promise.all(live.map((w) => w.ready()));
    type LeaderRow = { holder: string; term: string; pid: number };
    const leaderNow = () =>
      direct<LeaderRow>(`SELECT l.holder, l.term::text, i.pid FROM awa.leader l
                                                 JOIN awa.instances i ON i.id = l.holder WHERE l.expires_at > now()`);
    const old = await waitFor(
      async () => (await leaderNow()).find((r) => live.some((w) => w.pid === r.pid)),
      20_000,
      'a leader',
    );
    const leader = live.find((w) => w.pid === old.pid)!;
    await sigkill(leader);

    // A lease only a sweep rescues (its heartbeat is an hour old), of a kind no worker runs.
    const { id } = await seedRunning(direct, { kind: 'nobody.runs', instanceId: 'gone', heartbeatAgeMs: 3_600_000 });

    const next = await waitFor(
      async () => (await leaderNow()).find((r) => r.holder !== old.holder),
      30_000,
      'a new leader',
    );
    expect(live.map((w) => w.pid)).toContain(next.pid);
    expect(BigInt(next.term)).toBeGreaterThan(BigInt(old.term));
    const rescued = await waitFor(
      async () => {
        const job = await app.get(QueueProducer).getJob(id);
        // Rescued into retryable; a later sweep may already have promoted it (due) to available.
        return job && job.state !== 'running' ? job : null;
      },
      20_000,
      "the new leader's sweep",
    );
    expect(['retryable', 'available']).toContain(rescued.state);
    expect(rescued.errors).toEqual([expect.objectContaining({ attempt: 1, error: RescueErrors.heartbeatStale })]);
  });
});
