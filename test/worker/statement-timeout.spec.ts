import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AwaErrorCodes, HeartbeatService, JobHandler, QueueProducer, StatementTimeoutError } from 'nestjs-awa';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import pg from 'pg';
import { AwaMessages } from '../../lib/awa.messages.js';
import { jobsSql } from '../../lib/sql/index.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class Gated {
  release!: () => void;
  private readonly gate = new Promise<void>((r) => (this.release = r));
  @JobHandler('gated')
  async run() {
    await this.gate;
  }
}

// Long enough that no statement of the app times out on a busy machine, only the blocked ones.
const TIMEOUT_MS = 2_000;

/**
 * statementTimeout: a statement of the queue stuck behind a lock held elsewhere fails within the
 * timeout, is stopped on the server too, and does not hold up the heartbeats behind it.
 */
describe('statementTimeout', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let locker: pg.Client;
  /** The app's backends waiting on a lock (the test's own session excluded). */
  const waitingOnLock = async () =>
    queryOnce<{ query: string }>(
      db.url,
      `SELECT query FROM pg_stat_activity WHERE datname = ` +
        `current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
      [(locker as unknown as { processID: number }).processID],
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [Gated],
      // Long intervals: the test drives heartbeat ticks itself.
      awa: { statementTimeout: TIMEOUT_MS, heartbeatInterval: 3_600_000, heartbeatStaleAfter: 7_200_000 },
    });
    locker = new pg.Client({ connectionString: db.url });
    locker.on('error', () => undefined);
    await locker.connect();
  });
  afterAll(async () => {
    app?.get(Gated).release();
    await locker?.end().catch(() => undefined);
    await app?.close();
    await db?.drop();
  });

  it(
    'a statement blocked on a lock fails with a clear error, and is ' + 'stopped on the server rather than run later',
    async () => {
      const producer = app.get(QueueProducer);
      const { id } = await producer.enqueue('x.unhandled', {}, { runAt: new Date(Date.now() + 3_600_000) });
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM awa.jobs WHERE id = $1 FOR UPDATE', [id]);
      try {
        const error = await caught(() => app.get(AwaDatabase).query(jobsSql.cancelWaitingJob, [id, 'test cancel']));
        expect(error).toBeInstanceOf(StatementTimeoutError);
        expect(error).toMatchObject({
          code: AwaErrorCodes.statementTimeout,
          statement: jobsSql.cancelWaitingJob.name,
          timeoutMs: TIMEOUT_MS,
          message: AwaMessages.statementTimedOut(jobsSql.cancelWaitingJob.name, TIMEOUT_MS),
        });
        await waitFor(async () => (await waitingOnLock()).length === 0, 10_000, 'the timed-out backend to be gone');
      } finally {
        await locker.query('COMMIT');
      }
      // Had its backend lived on, the cancel would have run and committed now that the lock is free.
      expect((await producer.getJob(id))?.state).toBe('scheduled');
    },
  );

  it('a completion stuck behind a lock does not hold up the heartbeat lane; it lands once the lock frees', async () => {
    const producer = app.get(QueueProducer);
    const { id } = await producer.enqueue('gated', {});
    await waitFor(async () => (await producer.getJob(id))?.state === 'running');
    await locker.query('BEGIN');
    await locker.query('SELECT 1 FROM awa.active_leases WHERE job_id = $1 FOR UPDATE', [id]);
    try {
      app.get(Gated).release(); // its completion now waits for the lease row the test holds
      await waitFor(
        async () => (await waitingOnLock()).some((r) => r.query.includes('awa.active_leases')),
        10_000,
        'the completion to wait on the lock',
      );
      // The heartbeat goes through the same lane as the completion; it must come back, though the
      // lease row is still locked (its own statement times out too, so it reports a failed tick).
      expect(await app.get(HeartbeatService).tick()).toBeUndefined();
      expect((await producer.getJob(id))?.state).toBe('running');
    } finally {
      await locker.query('COMMIT');
    }
    const done = await waitFor(
      async () => {
        const job = await producer.getJob(id);
        return job?.state === 'completed' ? job : null;
      },
      15_000,
      'the completion to land',
    );
    expect(done).toMatchObject({ attempt: 1, errors: [] });
    expect(await queryOnce(db.url, 'SELECT 1 FROM awa.active_leases WHERE job_id = $1', [id])).toEqual([]);
  });
});
