import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type AwaModuleOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';

@Injectable()
class KindAHandler {
  @JobHandler('kind.a') run() {}
}

/** Queue 'default' keyed, as both services configure it. */
const KEYED: AwaModuleOptions = {
  ...FAST_OPTIONS,
  queues: { default: { ...FAST_OPTIONS.queues!.default, keyConcurrency: 2 } },
};

/**
 * Two services share a keyed queue with different kinds (or a rolling deploy adds a kind): app A
 * handles kind.a only; a job of fixture.sleep, which only app B (a worker process) handles, is
 * enqueued with a key before B starts. A's claims pass over the key; B must still run the job.
 */
describe('a keyed queue shared by two apps with different kinds', () => {
  let db: TestDatabase;
  let appA: TestingModule;
  let appB: WorkerProcess | undefined;
  const sql = (text: string, values?: unknown[]) => appA.get(DataSource).query(text, values);

  beforeAll(async () => {
    db = await createTestDatabase();
    appA = await startTestApp({ url: db.url, awa: KEYED, providers: [KindAHandler] });
  }, 60_000);
  afterAll(async () => {
    appB?.kill('SIGKILL');
    await appA?.close();
    await db?.drop();
  });

  it('runs the job in app B, which starts after app A’s claims passed over its key', async () => {
    const { id } = await appA
      .get(QueueProducer)
      .enqueue('fixture.sleep', { ms: 1 }, { queue: 'default', concurrencyKey: 'tenant-1' });
    // A claim of app A has visited the key (it polls every 200 ms); before the fix it took the key
    // out of the ready set there, for good.
    await waitFor(
      async () =>
        (
          await sql(`SELECT NOT EXISTS (SELECT FROM awa.flow_keys
                      WHERE key = 'tenant-1' AND has_waiting AND last_claimed_at = '-infinity') AS visited`)
        )[0].visited,
      10_000,
      'a claim of app A over the key',
    );
    appB = new WorkerProcess(db.url, KEYED);
    await appB.ready();
    await appB.waitForLine(new RegExp(`^DONE ${id}$`), 15_000);
    await waitFor(
      async () => (await sql(`SELECT state FROM awa.all_jobs WHERE id = $1`, [id]))[0].state === 'completed',
      10_000,
      'the job completed',
    );
    const [run] = await sql(`SELECT count(*)::int AS n FROM fixture_runs WHERE job_id = $1`, [id]);
    expect(run.n).toBe(1);
  }, 90_000);
});
