import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { setTimeout as sleep } from 'node:timers/promises';
import { createStatementGate } from '../support/statement-gate.js';
import { createTestDatabase, queryOnce } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const GATE = 4713;

@Injectable()
class Quick {
  readonly started: string[] = [];
  @JobHandler('quick')
  run(job: Job) {
    this.started.push(job.id);
  }
}

/**
 * A slot frees when its handler settles, before its result is written. When the writer cannot
 * keep up, unwritten results must hold claims back: each one still holds a lease, and an
 * unbounded backlog of them is work the instance has taken and not finished.
 */
describe('claims while results are waiting to be written', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it(
    'stop once unwritten results reach the size of the slots and ' + 'buffer, and go on when they are written',
    async () => {
      const app: TestingModule = await startTestApp({
        url: db.url,
        providers: [Quick],
        awa: { queues: { default: { concurrency: 2, prefetch: 0, pollInterval: 20 } } },
      });
      // Every result write (it deletes the lease) waits at the gate; claims insert leases and pass.
      const gate = await createStatementGate(db.url, GATE, 'DELETE', 'awa.active_leases');
      try {
        await gate.close();
        await app.get(QueueProducer).enqueueMany(Array.from({ length: 30 }, () => ({ kind: 'quick', args: {} })));

        const quick = app.get(Quick);
        await waitFor(() => quick.started.length >= 4, 15_000, '4 handlers to start');
        // A fixed window to show that nothing more happens: 25 poll intervals and as many wake-ups.
        await sleep(500);
        expect(quick.started).toHaveLength(4); // 2 slots + 2 unwritten results, never more
        expect(await queryOnce(db.url, 'SELECT count(*)::int AS leased FROM awa.active_leases')).toEqual([
          { leased: 4 },
        ]);

        await gate.open();
        await waitFor(
          async () =>
            (
              await queryOnce<{ n: number }>(
                db.url,
                `SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'completed'`,
              )
            )[0]!.n === 30,
          30_000,
          'all 30 jobs to complete',
        );
        expect(new Set(quick.started).size).toBe(30);
      } finally {
        await gate.remove();
        await app.close();
      }
    },
  );
});
