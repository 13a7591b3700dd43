import { DataSource } from 'typeorm';
import type { TestingModule } from '@nestjs/testing';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';

const SCHEDULE = { name: 'every-second', cron: '* * * * * *', kind: 'fixture.sleep', args: { ms: 1 } };
const OPTIONS = { ...FAST_OPTIONS, scheduleInterval: 200, schedules: [SCHEDULE] };
const PREFIX = `awa:schedule:${SCHEDULE.name}:`;

/**
 * Two real instances declare a seconds-level schedule; the maintenance leader is SIGKILLed while
 * fires are being enqueued. The survivor takes over, and the enqueued fire times are exactly the
 * contiguous cron sequence: none missed, none repeated.
 */
describe('a periodic schedule across a leader failover (SIGKILL)', () => {
  let db: TestDatabase;
  let observer: TestingModule;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    workers.forEach((w) => w.kill('SIGKILL'));
    await observer?.close();
    await db?.drop();
  });

  it('enqueues every fire exactly once', async () => {
    const leader = new WorkerProcess(db.url, OPTIONS);
    workers.push(leader);
    await leader.ready();
    // The observer only reads: no schedules, and a maintenance that never leads in time to matter.
    observer = await startTestApp({
      url: db.url,
      awa: { maintenanceInterval: 3_600_000, orphanSweepInterval: 3_600_000, scheduleInterval: 3_600_000 },
    });
    const ds = observer.get(DataSource);
    const fireTimes = async () =>
      (
        (await ds.query(`SELECT unique_key FROM awa.all_jobs WHERE unique_key LIKE $1 ORDER BY unique_key`, [
          `${PREFIX}%`,
        ])) as Array<{ unique_key: string }>
      ).map((r) => Date.parse(r.unique_key.slice(PREFIX.length)));

    await waitFor(async () => (await fireTimes()).length >= 3, 30_000, 'the first leader to enqueue fires');
    const survivor = new WorkerProcess(db.url, OPTIONS);
    workers.push(survivor);
    await survivor.ready();
    const before = (await fireTimes()).length;
    await waitFor(async () => (await fireTimes()).length >= before + 2, 30_000, 'fires with both instances up');

    leader.kill('SIGKILL');
    await leader.exit();
    const [{ killed_at: killedAt }] = (await ds.query('SELECT now() AS killed_at')) as [{ killed_at: Date }];
    await waitFor(
      async () => (await fireTimes()).some((t) => t >= killedAt.getTime() + 4_000),
      30_000,
      'the survivor to enqueue fires',
    );
    survivor.kill('SIGTERM');
    await survivor.exit();

    const times = await fireTimes();
    expect(times.length).toBeGreaterThanOrEqual(10);
    const [{ n }] = (await ds.query(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE unique_key LIKE $1`, [
      `${PREFIX}%`,
    ])) as [{ n: number }];
    expect(n).toBe(times.length);
    const expected = Array.from({ length: times.length }, (_, i) => times[0]! + i * 1_000);
    expect(times).toEqual(expected);
  });
});
