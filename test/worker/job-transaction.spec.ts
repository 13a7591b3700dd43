import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AbortReasons, JobHandler, JobTransactionError, QueueProducer, type Job } from 'nestjs-awa';
import { maintenanceSql } from '../../lib/sql/index.js';
import { finishedJob } from '../support/job-waits.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

interface CountArgs {
  /** Attempt 1's callback throws after its write. */
  throwOnFirst?: boolean;
  /** Enqueue a follow-up job through the transaction's manager. */
  followUp?: boolean;
  /** The handler calls job.transaction a second time. */
  twice?: boolean;
  /** The handler throws after job.transaction committed. */
  throwAfter?: boolean;
  /** Attempt 1 waits at the test's gate: 'in' inside the callback after its write, 'before' before calling it. */
  hold?: 'in' | 'before';
}

/** A gate a handler waits at, opened by the test: no sleeps. */
class Gate {
  private opened!: () => void;
  readonly reached = new Set<string>();
  readonly open = new Promise<void>((resolve) => (this.opened = resolve));
  async pass(id: string): Promise<void> {
    this.reached.add(id);
    await this.open;
  }
  release(): void {
    this.opened();
  }
}

@Injectable()
class Counter {
  gate = new Gate();
  /** What each attempt's job.transaction threw, by `id:attempt`. */
  readonly refused = new Map<string, JobTransactionError>();

  constructor(private readonly producer: QueueProducer) {}

  @JobHandler('count')
  async count(job: Job<CountArgs>) {
    const first = job.attempt === 1;
    if (first && job.args.hold === 'before') await this.gate.pass(job.id);
    try {
      await job.transaction(async (manager) => {
        await manager.query('UPDATE public.counter SET n = n + 1 WHERE id = 1');
        await manager.query('INSERT INTO public.effects (job_id, attempt) VALUES ($1, $2)', [job.id, job.attempt]);
        if (job.args.followUp) await this.producer.enqueue('noop', { after: job.id }, { manager });
        if (first && job.args.hold === 'in') await this.gate.pass(job.id);
        if (first && job.args.throwOnFirst) throw new Error('callback failed after its write');
        return { counted: job.attempt };
      });
    } catch (error) {
      if (error instanceof JobTransactionError) this.refused.set(`${job.id}:${job.attempt}`, error);
      throw error;
    }
    if (job.args.twice) {
      const again = await job.transaction(() => 'again').catch((error: unknown) => error);
      if (again instanceof JobTransactionError) this.refused.set(`${job.id}:${job.attempt}`, again);
    }
    if (job.args.throwAfter) throw new Error('thrown after the transaction committed');
    return 'the handler return value is ignored';
  }

  /** The same on a queue with a short hard deadline; records why its signal was aborted. */
  @JobHandler('count.timed', { queue: 'timed' })
  async countTimed(job: Job<CountArgs>) {
    job.signal.addEventListener('abort', () => this.aborted.set(job.id, String(job.signal.reason)));
    return this.count(job);
  }
  readonly aborted = new Map<string, string>();

  @JobHandler('noop')
  noop() {}
}

/** job.transaction: the handler's writes and its job's completion commit together, fenced on the lease. */
describe('job.transaction', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  let counter: Counter;

  beforeAll(async () => {
    db = await createTestDatabase();
    await queryOnce(
      db.url,
      `CREATE TABLE public.counter (id int PRIMARY KEY, n int NOT NULL);
       CREATE TABLE public.effects (job_id bigint NOT NULL, attempt int NOT NULL)`,
    );
    app = await startTestApp({
      url: db.url,
      providers: [Counter],
      // A held transaction is silent: heartbeatStaleAfter bounds its idle time (see JobTransactions).
      awa: {
        heartbeatStaleAfter: 30_000,
        queues: {
          default: { pollInterval: 100, retryBaseDelay: 10 },
          timed: { pollInterval: 100, retryBaseDelay: 10, deadlineDuration: 300 },
        },
      },
    });
    producer = app.get(QueueProducer);
    counter = app.get(Counter);
  });
  afterAll(async () => {
    counter?.gate.release();
    await app?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    counter.gate = new Gate();
    await queryOnce(
      db.url,
      'TRUNCATE public.effects; DELETE FROM public.counter; INSERT INTO public.counter VALUES (1, 0)',
    );
  });

  const count = async () => (await queryOnce<{ n: number }>(db.url, 'SELECT n FROM public.counter'))[0]!.n;
  const effects = (id: string) =>
    queryOnce<{ attempt: number }>(db.url, 'SELECT attempt FROM public.effects WHERE job_id = $1 ORDER BY attempt', [
      id,
    ]);
  const lease = (id: string) =>
    queryOnce<{ run_lease: string }>(db.url, 'SELECT run_lease::text FROM awa.active_leases WHERE job_id = $1', [id]);
  /** Puts the lease of job `id` past its deadline in the database: the deadline rescue would take it. */
  const pastDeadline = (id: string) =>
    queryOnce(db.url, `UPDATE awa.active_leases SET deadline_at = now() - interval '1 second' WHERE job_id = $1`, [id]);
  /** Enqueues a job whose first callback waits at the gate after its writes, and waits until it does. */
  const enqueueHeld = async (kind: string) => {
    const { id } = await producer.enqueue(kind, { hold: 'in' });
    await waitFor(async () => counter.gate.reached.has(id), 15_000, 'the callback to wait at the gate');
    return id;
  };
  const rescueDeadlines = () =>
    queryOnce(db.url, maintenanceSql.rescueExpiredDeadlines.text, [[], [], [], 10, 10, 100, 'past its deadline']);

  it("commits the handler's writes, a job enqueued through the manager and the completion together", async () => {
    const { id } = await producer.enqueue('count', { followUp: true });
    const job = await finishedJob(producer, id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, output: { counted: 1 }, errors: [] });
    expect(await effects(id)).toEqual([{ attempt: 1 }]);
    expect(await count()).toBe(1);
    const followUps = await queryOnce(
      db.url,
      `SELECT id FROM awa.all_jobs WHERE kind = 'noop' AND args->>'after' = $1`,
      [id],
    );
    expect(followUps).toHaveLength(1);
  });

  it('writes nothing when the callback throws: the attempt fails and its retry commits once', async () => {
    const { id } = await producer.enqueue('count', { throwOnFirst: true });
    const job = await finishedJob(producer, id);
    expect(job.state).toBe('completed');
    expect(job.attempt).toBe(2);
    expect(job.errors.map((e) => [e.attempt, e.error])).toEqual([[1, expect.stringContaining('callback failed')]]);
    expect(await effects(id)).toEqual([{ attempt: 2 }]);
    expect(await count()).toBe(1);
  });

  it('refuses a second call with a typed error; the first completed the job', async () => {
    const { id } = await producer.enqueue('count', { twice: true });
    const job = await finishedJob(producer, id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, output: { counted: 1 } });
    expect(counter.refused.get(`${id}:1`)).toMatchObject({ reason: 'reused', code: 'AWA_JOB_TRANSACTION' });
    expect(await count()).toBe(1);
  });

  it('keeps the job completed when the handler throws after the transaction committed', async () => {
    const { id } = await producer.enqueue('count', { throwAfter: true });
    const job = await finishedJob(producer, id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, output: { counted: 1 }, errors: [] });
    expect(await count()).toBe(1);
  });

  it('makes a rescue that reaches the lease while the transaction holds it skip it: one write, one completion', async () => {
    const id = await enqueueHeld('count');
    // The lease is past its deadline now: the rescue would take it, but the transaction fences it.
    await pastDeadline(id);
    expect(await rescueDeadlines()).toEqual([]);
    counter.gate.release();
    const job = await finishedJob(producer, id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, output: { counted: 1 }, errors: [] });
    expect(await rescueDeadlines()).toEqual([]);
    expect(await effects(id)).toEqual([{ attempt: 1 }]);
    expect(await count()).toBe(1);
  });

  it('refuses a stale attempt whose lease a rescue took first: it writes nothing, the rerun writes once', async () => {
    const { id } = await producer.enqueue('count', { hold: 'before' });
    await waitFor(async () => counter.gate.reached.has(id), 15_000, 'the handler to wait at the gate');
    const [held] = await lease(id);
    await pastDeadline(id);
    await waitFor(async () => (await lease(id))[0]?.run_lease !== held!.run_lease, 15_000, 'the rescue');
    // The rescued job runs again (attempt 2, no gate) and completes; then the stale attempt goes on.
    await finishedJob(producer, id);
    counter.gate.release();
    const refused = await waitFor(
      async () => counter.refused.get(`${id}:1`),
      15_000,
      'the stale attempt to be refused',
    );
    expect(refused.reason).toBe('lease-lost');
    const job = await producer.getJob(id);
    expect(job).toMatchObject({ state: 'completed', attempt: 2, output: { counted: 2 } });
    expect(await effects(id)).toEqual([{ attempt: 2 }]);
    expect(await count()).toBe(1);
  });

  it('holds off the hard deadline while the transaction holds the fence: the attempt ends when it commits', async () => {
    const id = await enqueueHeld('count.timed');
    await waitFor(async () => counter.aborted.get(id), 15_000, 'the deadline to abort the attempt');
    expect(counter.aborted.get(id)).toBe(AbortReasons.deadline);
    // Past its deadline in the database too: the maintenance rescue would take it, but the fence holds.
    await pastDeadline(id);
    expect(await rescueDeadlines()).toEqual([]);
    counter.gate.release();
    const job = await finishedJob(producer, id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, output: { counted: 1 }, errors: [] });
    expect(await effects(id)).toEqual([{ attempt: 1 }]);
    expect(await count()).toBe(1);
  });

  it('rolls back when the job is cancelled during the transaction: nothing written, the job ends cancelled', async () => {
    const id = await enqueueHeld('count');
    expect(await producer.cancel(id)).toEqual({ outcome: 'signalled', previousState: 'running' });
    counter.gate.release();
    const job = await finishedJob(producer, id);
    expect(job.state).toBe('cancelled');
    expect(counter.refused.get(`${id}:1`)?.reason).toBe('cancelled');
    expect(await effects(id)).toEqual([]);
    expect(await count()).toBe(0);
  });
});
