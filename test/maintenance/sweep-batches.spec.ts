import { MaintenanceService, RescueErrors } from 'nestjs-awa';
import { sweepClock } from '../../lib/maintenance/sweep-runner.js';
import { seedRunning, type Exec } from '../support/job-factory.js';
import { useQuietApp } from './quiet-app.js';

const HOUR = 3_600_000;

/**
 * A sweep repeats each task's batch until a batch comes back short, so a backlog several batches
 * deep is cleared in one tick instead of one batch per maintenanceInterval.
 */
describe('MaintenanceService sweeps in batches', () => {
  // rescueBatchSize 2: rescues and promotion take 2 rows per batch, cleanup and flow keys cleanup 20.
  const ctx = useQuietApp(
    {
      rescueBatchSize: 2,
      retention: { completed: HOUR, failed: HOUR },
      queues: { default: { retryBaseDelay: HOUR, retryMaxDelay: HOUR } },
    },
    {
      reset: async (sql) => {
        await sql(`DELETE FROM awa.instances WHERE hostname = 'seeded'`);
        await sql('TRUNCATE awa.flow_keys');
      },
    },
  );
  const { exec } = ctx;
  const service = () => ctx.app.get(MaintenanceService);
  afterEach(() => {
    sweepClock.now = () => performance.now();
  });

  /** 5 stale leases, 5 expired deadlines, 5 due scheduled jobs, 45 expired completed jobs and 25 idle keys. */
  async function seedBacklog(run: Exec): Promise<void> {
    for (let i = 0; i < 5; i++) {
      await seedRunning(run, { heartbeatAgeMs: 2 * HOUR, instanceId: 'silent' });
      await seedRunning(run, { deadlineInMs: -1_000, instanceId: 'hung' });
    }
    await run(
      `INSERT INTO awa.jobs (kind, state, run_at) SELECT 'k', 'scheduled', ` +
        `now() - interval '1 minute' FROM generate_series(1, 5)`,
    );
    await run(`INSERT INTO awa.jobs (kind, state, attempt, finalized_at)
               SELECT 'k', 'completed', 1, now() - interval '2 hours' FROM generate_series(1, 45)`);
    await run(`INSERT INTO awa.flow_keys (queue, key, has_waiting, last_claimed_at)
               SELECT 'default', 'key-' || i, false, now() - interval '2 hours' FROM generate_series(1, 25) i`);
  }
  const counts = async () =>
    (
      await exec(`
    SELECT (SELECT count(*) FROM awa.active_leases)::int AS leases,
           (SELECT count(*) FROM awa.all_jobs WHERE state = 'scheduled')::int AS scheduled,
           (SELECT count(*) FROM awa.all_jobs WHERE state = 'completed')::int AS completed,
           (SELECT count(*) FROM awa.flow_keys)::int AS keys`)
    )[0];

  it(
    'repeats each task until a batch comes back short, so one ' + 'sweep clears a backlog several batches deep',
    async () => {
      await seedBacklog(exec);
      expect(await service().sweep()).toEqual({
        'heartbeat rescue': 5,
        'deadline rescue': 5,
        promotion: 5,
        cleanup: 45,
        'flow keys cleanup': 25,
        'history rotation': 0,
        'job events cleanup': 0,
      });
      expect(await counts()).toEqual({ leases: 0, scheduled: 0, completed: 0, keys: 0 });
      const errors = await exec(
        `SELECT errors -> 0 ->> 'error' AS error, count(*)::int AS n FROM ` +
          `awa.jobs WHERE state = 'retryable' GROUP BY 1 ORDER BY 1`,
      );
      expect(errors).toEqual([
        { error: RescueErrors.deadlineExceeded, n: 5 },
        { error: RescueErrors.heartbeatStale, n: 5 },
      ]);
    },
  );

  it('the orphan sweep rescues every lease of a dead instance in one tick', async () => {
    // No lock and a stale row: dead on the first sweep (a missing lock alone waits for a second look).
    await exec(
      `INSERT INTO awa.instances (id, hostname, pid, lock_key, heartbeat_at) ` +
        `VALUES ('dead', 'seeded', 1, 1, now() - interval '1 hour')`,
    );
    for (let i = 0; i < 5; i++) await seedRunning(exec, { instanceId: 'dead' });
    expect(await service().sweepOrphans()).toBe(5);
    expect(await counts()).toMatchObject({ leases: 0 });
    expect(await exec(`SELECT id FROM awa.instances WHERE id = 'dead'`)).toEqual([]);
  });

  it('stop() ends a tick in progress after its current round of batches', async () => {
    await seedBacklog(exec);
    // The boot tick of start() is under way when stop() is called; stop() waits for it to end.
    service().start();
    await service().stop();
    expect(await counts()).toEqual({ leases: 6, scheduled: 3, completed: 25, keys: 5 });
  });

  it('stops at the time budget of the tick (half the interval): each task then has run one batch', async () => {
    await seedBacklog(exec);
    // Every reading of the sweep clock is an hour later than the one before: the budget is spent
    // after the first round of batches.
    let t = 0;
    sweepClock.now = () => (t += HOUR);
    expect(await service().sweep()).toEqual({
      'heartbeat rescue': 2,
      'deadline rescue': 2,
      promotion: 2,
      cleanup: 20,
      'flow keys cleanup': 20,
      'history rotation': 0,
      'job events cleanup': 0,
    });
    sweepClock.now = () => performance.now();
    expect(await service().sweep()).toEqual({
      'heartbeat rescue': 3,
      'deadline rescue': 3,
      promotion: 3,
      cleanup: 25,
      'flow keys cleanup': 5,
      'history rotation': 0,
      'job events cleanup': 0,
    });
  });
});
