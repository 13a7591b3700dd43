import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AbortReasons, HeartbeatService, JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class Blocked {
  release!: () => void;
  private readonly gate = new Promise<void>((r) => (this.release = r));
  /** Why each job's signal was aborted, by job id. */
  readonly aborted = new Map<string, unknown>();
  @JobHandler('blocked')
  async run(job: Job) {
    job.signal.addEventListener('abort', () => this.aborted.set(job.id, job.signal.reason));
    await this.gate;
  }
}

/** HeartbeatService refreshes all leases with ceil(n / heartbeatBatchSize) statements. */
describe('HeartbeatService', () => {
  let db: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [Blocked],
      // Long interval: this test drives tick() itself.
      awa: {
        heartbeatInterval: 3_600_000,
        heartbeatStaleAfter: 7_200_000,
        heartbeatBatchSize: 2,
        queues: { default: { concurrency: 5 } },
      },
    });
  });
  afterAll(async () => {
    app?.get(Blocked).release();
    await app?.close();
    await db?.drop();
  });

  it('refreshes every in-flight lease in batches, and moves heartbeat_at forward', async () => {
    const dataSource = app.get(DataSource);
    await app.get(QueueProducer).enqueueMany(Array.from({ length: 5 }, () => ({ kind: 'blocked', args: {} })));
    await waitFor(
      async () => Number((await dataSource.query('SELECT count(*) AS n FROM awa.active_leases'))[0].n) === 5,
    );
    await dataSource.query(`UPDATE awa.active_leases SET heartbeat_at = now() - interval '1 minute'`);

    const report = await app.get(HeartbeatService).tick();
    expect(report).toEqual({ refreshed: 5, lost: 0, statements: 3 });
    const stale = await dataSource.query(
      `SELECT count(*) AS n FROM awa.active_leases WHERE heartbeat_at < now() - interval '30 seconds'`,
    );
    expect(Number(stale[0].n)).toBe(0);
  });

  it('reports a lease it no longer finds as lost and aborts only that handler', async () => {
    const dataSource = app.get(DataSource);
    const [{ gone }] = await dataSource.query(`SELECT max(job_id)::text AS gone FROM awa.active_leases`);
    await dataSource.query(`DELETE FROM awa.active_leases WHERE job_id = $1`, [gone]); // as a rescue would
    const report = await app.get(HeartbeatService).tick();
    expect(report).toEqual({ refreshed: 4, lost: 1, statements: 3 });
    const blocked = app.get(Blocked);
    expect([...blocked.aborted.keys()]).toEqual([gone]);
    expect(blocked.aborted.get(gone)).toBe(AbortReasons.leaseLost);
  });
});
