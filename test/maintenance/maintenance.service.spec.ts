import type { TestingModule } from '@nestjs/testing';
import { MaintenanceService, RescueErrors } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { readJob } from '../sql/sql-fixture.js';
import { seedJob, seedRunning, type Exec } from '../support/job-factory.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const HOUR = 3_600_000;
const TASKS = [
  'cleanup',
  'deadline rescue',
  'flow keys cleanup',
  'heartbeat rescue',
  'history rotation',
  'job events cleanup',
  'promotion',
];

/** Leader-guarded sweeps: two apps on one database, one leader at a time. */
describe('MaintenanceService', () => {
  let db: TestDatabase;
  const apps = new Set<TestingModule>();
  let exec: Exec;

  const boot = async () => {
    const app = await startTestApp({
      url: db.url,
      awa: {
        // Only the boot sweep runs by itself; the test calls sweep() and sweepOrphans().
        heartbeatInterval: 1_000,
        heartbeatStaleAfter: 30_000,
        maintenanceInterval: 3_600_000,
        orphanSweepInterval: 3_600_000,
        // The schedule tick asks for leadership too: with its default (1 s) the follower could take
        // over while the leader's app was still closing, before the test's own sweep.
        scheduleInterval: 3_600_000,
        // Long enough that a job rescued in a sweep is not also promoted by that sweep.
        queues: { default: { retryBaseDelay: 60_000, retryMaxDelay: 60_000 } },
      },
    });
    apps.add(app);
    return app;
  };
  const service = (app: TestingModule) => app.get(MaintenanceService);
  /** Sweeps both apps; returns [leader, follower], checking that exactly one of them leads. */
  async function roles(a: TestingModule, b: TestingModule): Promise<[TestingModule, TestingModule]> {
    const [ra, rb] = await Promise.all([service(a).sweep(), service(b).sweep()]);
    expect([ra === undefined, rb === undefined].sort()).toEqual([false, true]);
    const [leader, follower] = ra ? [a, b] : [b, a];
    expect(service(leader).isLeader).toBe(true);
    expect(service(follower).isLeader).toBe(false);
    return [leader, follower];
  }

  let first: TestingModule;
  let second: TestingModule;
  beforeAll(async () => {
    db = await createTestDatabase();
    first = await boot();
    second = await boot();
    const dataSource = first.get(DataSource);
    exec = (text, values) => dataSource.query(text, values);
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await db?.drop();
  });

  it('has exactly one leader; only its sweeps run and report', async () => {
    // The boot sweeps elect one of the two.
    await waitFor(() => service(first).isLeader || service(second).isLeader, 15_000, 'a leader');
    expect([service(first).isLeader, service(second).isLeader].filter(Boolean)).toHaveLength(1);
    const [leader, follower] = await roles(first, second);
    const report = await service(leader).sweep();
    expect(Object.keys(report!).sort()).toEqual(TASKS);
    expect(await service(follower).sweep()).toBeUndefined();
    expect(typeof (await service(leader).sweepOrphans())).toBe('number');
    expect(await service(follower).sweepOrphans()).toBeUndefined();
    expect(service(leader).isLeader).toBe(true);
    expect(service(follower).isLeader).toBe(false);
  });

  it("the leader's sweep runs every task and reports what each moved; the follower's moves nothing", async () => {
    const [leader, follower] = await roles(first, second);
    const stale = await seedRunning(exec, { heartbeatAgeMs: HOUR });
    const expired = await seedRunning(exec, { deadlineInMs: -1_000 });
    const due = await seedJob(exec, { state: 'scheduled', runAtMs: -1_000 });
    // default retention: 24 h
    const old = await seedJob(exec, { state: 'completed', attempt: 1, finalizedAtMs: -48 * HOUR });
    // A key served last two hours ago, with nothing running or waiting.
    await exec(`INSERT INTO awa.flow_keys (queue, key, has_waiting, last_claimed_at)
                VALUES ('default', 'idle', false, now() - interval '2 hours')`);
    // Dead on one sweep: no lock and a stale row (a missing lock alone needs a second look; see OrphanRescueTask).
    await exec(
      `INSERT INTO awa.instances (id, hostname, pid, lock_key, heartbeat_at) ` +
        `VALUES ('dead', 'seeded', 1, 1, now() - interval '1 day')`,
    );
    const orphan = await seedRunning(exec, { instanceId: 'dead' });

    expect(await service(follower).sweep()).toBeUndefined();
    expect(await service(follower).sweepOrphans()).toBeUndefined();
    expect(await exec(`SELECT count(*)::int AS n FROM awa.active_leases`)).toEqual([{ n: 3 }]);

    expect(await service(leader).sweep()).toEqual({
      'heartbeat rescue': 1,
      'deadline rescue': 1,
      promotion: 1,
      cleanup: 1,
      'flow keys cleanup': 1,
      'history rotation': 0,
      'job events cleanup': 0,
    });
    expect(await readJob(exec, stale.id)).toMatchObject({
      state: 'retryable',
      errors: [{ error: RescueErrors.heartbeatStale }],
    });
    expect(await readJob(exec, expired.id)).toMatchObject({
      state: 'retryable',
      errors: [{ error: RescueErrors.deadlineExceeded }],
    });
    expect(await readJob(exec, due)).toMatchObject({ state: 'available' });
    expect(await readJob(exec, old)).toBeUndefined();

    expect(await service(leader).sweepOrphans()).toBe(1);
    expect(await readJob(exec, orphan.id)).toMatchObject({
      state: 'retryable',
      errors: [{ error: RescueErrors.instanceDied('dead') }],
    });
    expect(await service(leader).sweep()).toEqual({
      'heartbeat rescue': 0,
      'deadline rescue': 0,
      promotion: 0,
      cleanup: 0,
      'flow keys cleanup': 0,
      'history rotation': 0,
      'job events cleanup': 0,
    });
  });

  it('a leader whose session dies loses the lead, and the other instance takes it on its next sweep', async () => {
    const [leader, follower] = await roles(first, second);
    const session = leader.get(InstanceSession, { strict: false });
    const terminated = await exec(
      `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1`,
      [`awa:${session.id}`],
    );
    expect(terminated).toEqual([{ done: true }]);
    await waitFor(() => !service(leader).isLeader, 15_000, 'the old leader to notice it lost its session');

    expect(await service(follower).sweep()).toBeDefined();
    expect(service(follower).isLeader).toBe(true);
    // The old leader's session comes back, but the lead stays where it went.
    await waitFor(() => session.connected, 15_000, "the old leader's session to reconnect");
    expect(await service(leader).sweep()).toBeUndefined();
    expect(service(leader).isLeader).toBe(false);
  });

  it('when the leader app closes, the other becomes leader on its next sweep', async () => {
    const [leader, follower] = await roles(first, second);
    await leader.close();
    apps.delete(leader);
    expect(service(follower).isLeader).toBe(false);
    expect(Object.keys((await service(follower).sweep())!).sort()).toEqual(TASKS);
    expect(service(follower).isLeader).toBe(true);
  });
});
