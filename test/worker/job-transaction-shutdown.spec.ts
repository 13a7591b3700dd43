import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AbortReasons, JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class Held {
  reached = false;
  private opened!: () => void;
  private readonly gate = new Promise<void>((resolve) => (this.opened = resolve));

  /** Why the attempt's signal was aborted. */
  aborted: unknown;

  @JobHandler('held')
  run(job: Job) {
    job.signal.addEventListener('abort', () => (this.aborted = job.signal.reason));
    return job.transaction(async (manager) => {
      await manager.query('UPDATE public.counter SET n = n + 1');
      this.reached = true;
      await this.gate;
      return 'committed after shutdown began';
    });
  }

  open(): void {
    this.opened();
  }
}

/** Shutdown while a job.transaction holds its fence: the attempt is not released; shutdown waits for the transaction. */
describe('job.transaction at shutdown', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await queryOnce(db.url, 'CREATE TABLE public.counter (n int NOT NULL); INSERT INTO public.counter VALUES (0)');
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('does not release an attempt inside job.transaction past shutdownTimeout: close() waits, and it commits', async () => {
    const app: TestingModule = await startTestApp({
      url: db.url,
      providers: [Held],
      awa: { heartbeatStaleAfter: 30_000, shutdownTimeout: 100 },
    });
    const held = app.get(Held);
    const { id } = await app.get(QueueProducer).enqueue('held', {});
    await waitFor(async () => held.reached, 15_000, 'the callback to wait at the gate');
    // Shutdown gives up on the handler after shutdownTimeout (aborting its signal) and releases the
    // attempts left, but not this one: its transaction holds the fence, and close() waits for it.
    const closing = app.close();
    await waitFor(async () => held.aborted === AbortReasons.shutdown, 15_000, 'shutdown to abort the attempt');
    const [running] = await queryOnce<{ state: string; errors: unknown[] }>(
      db.url,
      'SELECT state, errors FROM awa.all_jobs WHERE id = $1',
      [id],
    );
    expect(running).toEqual({ state: 'running', errors: [] });
    held.open();
    await closing;
    const rows = await queryOnce(db.url, 'SELECT state, attempt, output, errors FROM awa.all_jobs WHERE id = $1', [id]);
    expect(rows).toEqual([{ state: 'completed', attempt: 1, output: 'committed after shutdown began', errors: [] }]);
    expect(await queryOnce(db.url, 'SELECT n FROM public.counter')).toEqual([{ n: 1 }]);
    expect(await queryOnce(db.url, 'SELECT job_id FROM awa.active_leases')).toEqual([]);
  });
});
