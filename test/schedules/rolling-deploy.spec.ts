import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';
import { WorkerProcess } from '../support/worker-process.js';

// Both versions handle fixture.sleep; each declares a schedule of it that the other does not.
const OLD = { name: 'report.old', cron: '0 3 * * *', kind: 'fixture.sleep', args: { ms: 1 } };
const NEW = { name: 'report.new', cron: '0 4 * * *', kind: 'fixture.sleep', args: { ms: 1 } };
const V1 = { ...FAST_OPTIONS, scheduleInterval: 200, schedules: [OLD] };
const V2 = { ...FAST_OPTIONS, scheduleInterval: 200, schedules: [NEW] };

/**
 * A rolling deploy in real processes: old (v1) and new (v2) versions overlap, each handling the
 * kind of a schedule the other does not declare. A declared schedule stays while any live instance
 * declares it, whichever version boots last; once no live instance declares it, the leader prunes it.
 */
describe('declared schedules across a rolling deploy (real processes)', () => {
  let db: TestDatabase;
  let ds: DataSource;
  const workers: WorkerProcess[] = [];
  const start = async (options: object) => {
    const worker = new WorkerProcess(db.url, options);
    workers.push(worker);
    await worker.ready();
    return worker;
  };
  const names = async () =>
    ((await ds.query('SELECT name FROM awa.schedules ORDER BY name')) as Array<{ name: string }>).map((r) => r.name);
  const databaseNow = async () => ((await ds.query('SELECT now() AS now')) as [{ now: Date }])[0].now.getTime();

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    workers.forEach((w) => w.kill('SIGKILL'));
    await Promise.all(workers.map((w) => w.exit()));
    await ds?.destroy();
    await db?.drop();
  });

  it('keeps each version’s schedule while an instance declaring it lives, and prunes it after', async () => {
    const v1 = await start(V1);
    ds = new DataSource({ type: 'postgres', url: db.url });
    await ds.initialize();
    expect(await names()).toEqual(['report.old']);

    // The new version boots beside the old one: the old schedule stays.
    await start(V2);
    expect(await names()).toEqual(['report.new', 'report.old']);
    // An old instance (re)starting after the new version is up keeps the new schedule.
    const v1b = await start(V1);
    expect(await names()).toEqual(['report.new', 'report.old']);
    // A fixed window that proves nothing happens: several leader sweeps (every 200 ms) prune nothing.
    const overlapAt = await databaseNow();
    await waitFor(async () => (await databaseNow()) > overlapAt + 1_500, 10_000, 'sweeps during the overlap');
    expect(await names()).toEqual(['report.new', 'report.old']);

    // The old version goes away (one stops, one dies): the leader prunes its schedule.
    v1.kill('SIGKILL');
    v1b.kill('SIGTERM');
    await Promise.all([v1.exit(), v1b.exit()]);
    await waitFor(async () => (await names()).length === 1, 30_000, 'the old schedule to be pruned');
    expect(await names()).toEqual(['report.new']);
  });
});
