import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { WorkerService } from '../../lib/worker/worker.service.js';
import { createStatementGate, type StatementGate } from '../support/statement-gate.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const GATE = 4711;

@Injectable()
class Tracked {
  readonly started: string[] = [];
  @JobHandler('tracked')
  run(job: Job) {
    this.started.push(job.id);
  }
}

/**
 * A claim still in flight when shutdown begins: its rows come back after stopClaiming(). The claim
 * is held deterministically by a test-only trigger that waits on an advisory lock this test holds.
 */
describe('a claim in flight at shutdown', () => {
  let db: TestDatabase;
  let gate: StatementGate;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('gives every claimed row back at once, starts no handler, and leaves no lease', async () => {
    const app: TestingModule = await startTestApp({
      url: db.url,
      providers: [Tracked],
      awa: { queues: { default: { concurrency: 1, prefetch: 3, pollInterval: 60_000 } } },
    });
    let closed = false;
    try {
      gate = await createStatementGate(db.url, GATE, 'INSERT', 'awa.active_leases'); // claims insert leases
      await gate.close();
      const jobs = await app
        .get(QueueProducer)
        .enqueueMany(Array.from({ length: 4 }, () => ({ kind: 'tracked', args: {} })));
      await waitFor(async () => (await gate.waiting()) === 1, 15_000, 'the claim to wait at the gate');

      // Shutdown begins (stopClaiming has run once stop() returned its promise), then the claim returns.
      const workers = app.get(WorkerService);
      const stop = workers.stop.bind(workers);
      let stopping!: () => void;
      const stopped = new Promise<void>((resolve) => (stopping = resolve));
      workers.stop = () => {
        const done = stop();
        stopping();
        return done;
      };
      const closing = app.close();
      await stopped;
      await gate.open();
      await closing;
      closed = true;

      expect(app.get(Tracked).started).toEqual([]);
      expect(await queryOnce(db.url, 'SELECT job_id FROM awa.active_leases')).toEqual([]);
      const rows = await queryOnce(
        db.url,
        `SELECT state, attempt FROM awa.all_jobs WHERE id = ANY($1::bigint[]) ORDER BY id`,
        [jobs.map((j) => j.id)],
      );
      expect(rows).toEqual(jobs.map(() => ({ state: 'available', attempt: 0 })));
    } finally {
      await gate?.remove();
      if (!closed) await app.close();
    }
  });
});
