import type { TestingModule } from '@nestjs/testing';
import { RescueErrors } from 'nestjs-awa';
import pg from 'pg';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { ORPHAN_SWEEP_GRACE_MS, OrphanRescueTask } from '../../lib/maintenance/tasks/orphan-rescue.task.js';
import { instancesSql } from '../../lib/sql/index.js';
import { livenessTiming } from '../../lib/instance/liveness-timing.js';
import { leasesOf, readJob } from '../sql/sql-fixture.js';
import { seedRunning, type Exec } from '../support/job-factory.js';
import { useQuietApp, useTestDatabase, type QuietApp } from './quiet-app.js';
import { waitFor } from '../support/wait-for.js';

const HOUR = 3_600_000;
const OPTIONS = {
  // Never fires by itself (the app's MaintenanceService is stopped); sets how long a missing lock must last.
  orphanSweepInterval: 400,
  rescueBatchSize: 2,
  queues: { default: { retryBaseDelay: 9_000, retryMaxDelay: 9_000 } },
};

describe('OrphanRescueTask', () => {
  const db = useTestDatabase();
  let exec: Exec;
  const lockHolders: pg.Client[] = [];
  db.onClose(() => Promise.all(lockHolders.map((c) => c.end().catch(() => undefined))));

  let nextKey = 500_000;
  /** Registers a seeded instance, `ageMs` old; `live` holds its liveness lock on a session of its own. */
  async function instance(id: string, { live, ageMs = 0 }: { live: boolean; ageMs?: number }): Promise<number> {
    const key = ++nextKey;
    await exec(
      `INSERT INTO awa.instances (id, hostname, pid, queues, lock_key, heartbeat_at)
                VALUES ($1, 'seeded', 1, '{default}', $2, now() - $3::float8 * interval '1 millisecond')`,
      [id, key, ageMs],
    );
    if (live) await holdLock(key);
    return key;
  }
  /** Takes liveness lock `key` on a session of its own, as a live instance does. */
  async function holdLock(key: number): Promise<void> {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    lockHolders.push(client);
    const { rows } = await client.query({ text: instancesSql.acquireLivenessLock.text, values: [key] });
    expect(rows).toEqual([{ acquired: true }]);
  }
  const instanceIds = async () =>
    (await exec(`SELECT id FROM awa.instances WHERE hostname = 'seeded' ORDER BY id`)).map((r) => r.id as string);

  /** The app of the enclosing block, on the file's database; `exec` goes through it while the block runs. */
  function useApp(extra: object = {}): QuietApp {
    const ctx = useQuietApp(
      { ...OPTIONS, ...extra },
      {
        database: db,
        reset: (sql) => sql(`DELETE FROM awa.instances WHERE hostname = 'seeded'`),
      },
    );
    beforeAll(() => {
      exec = ctx.exec;
    });
    return ctx;
  }

  describe('with the session liveness probe (default)', () => {
    const ctx = useApp();
    const task = ctx.task(OrphanRescueTask);
    let app: TestingModule;
    let self: string;
    beforeAll(() => {
      app = ctx.app;
      self = app.get(InstanceSession, { strict: false }).id;
    });

    it(
      'rescues the leases of instances whose row is stale at once, and of those ' +
        'whose lock stays gone on a later sweep, then forgets them',
      async () => {
        await instance('dead-lock', { live: false });
        await instance('dead-stale', { live: true, ageMs: HOUR });
        await instance('alive', { live: true });
        const lost = await seedRunning(exec, { instanceId: 'dead-lock' });
        const stale = await seedRunning(exec, { instanceId: 'dead-stale', attempt: 3, maxAttempts: 3 });
        // Leases of live instances stay, however stale they look: that is the other rescues' call.
        const alive = await seedRunning(exec, { instanceId: 'alive', heartbeatAgeMs: HOUR });
        const mine = await seedRunning(exec, { instanceId: self, heartbeatAgeMs: HOUR });

        expect(await task.run()).toBe(1);
        expect(await readJob(exec, lost.id)).toMatchObject({ state: 'running' });
        await waitFor(async () => (await task.run()) === 1, 15_000, 'the missing lock to be confirmed');

        const a = await readJob(exec, lost.id);
        expect(a).toMatchObject({
          state: 'retryable',
          errors: [{ attempt: 1, error: RescueErrors.instanceDied('dead-lock') }],
        });
        expect(a!.retry_delay_ms).toBeCloseTo(9_000, 3);
        expect(await readJob(exec, stale.id)).toMatchObject({
          state: 'failed',
          errors: [{ attempt: 3, error: RescueErrors.instanceDied('dead-stale') }],
        });
        for (const job of [alive, mine])
          expect(await readJob(exec, job.id)).toMatchObject({ state: 'running', errors: [] });
        expect(await leasesOf(exec, alive.id)).toEqual(['1@alive']);
        expect(await leasesOf(exec, mine.id)).toEqual([`1@${self}`]);
        expect(await instanceIds()).toEqual(['alive']);
        // The leader's own row is never touched.
        expect(await exec('SELECT id FROM awa.instances WHERE id = $1', [self])).toHaveLength(1);
      },
    );

    it(
      'rescues at most rescueBatchSize leases per run, and forgets an ' + 'instance only once its last lease is gone',
      async () => {
        await instance('dead', { live: false, ageMs: HOUR });
        for (let i = 0; i < 3; i++) await seedRunning(exec, { instanceId: 'dead' });
        expect(await task.run()).toBe(2);
        expect(await instanceIds()).toEqual(['dead']);
        expect(await task.run()).toBe(1);
        expect(await instanceIds()).toEqual([]);
        expect(await exec(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'retryable'`)).toEqual([{ n: 3 }]);
        expect(await task.run()).toBe(0);
      },
    );

    it('forgets a dead instance without leases, and does nothing when every instance lives', async () => {
      await instance('dead-idle', { live: false, ageMs: HOUR });
      await instance('alive', { live: true });
      const job = await seedRunning(exec, { instanceId: 'alive', deadlineInMs: -HOUR });
      expect(await task.run()).toBe(0);
      expect(await instanceIds()).toEqual(['alive']);
      expect(await task.run()).toBe(0);
      expect(await readJob(exec, job.id)).toMatchObject({ state: 'running' });
    });

    it('does not count an instance with a fresh row dead on one sweep that finds its lock missing', async () => {
      await instance('reconnecting', { live: false });
      const job = await seedRunning(exec, { instanceId: 'reconnecting' });
      expect(await task.run()).toBe(0);
      expect(await readJob(exec, job.id)).toMatchObject({ state: 'running', errors: [] });
      expect(await instanceIds()).toEqual(['reconnecting']);
      // Still missing on a later sweep, long enough after the first: dead.
      await waitFor(async () => (await task.run()) === 1, 15_000, 'the missing lock to be confirmed');
      expect(await readJob(exec, job.id)).toMatchObject({
        state: 'retryable',
        errors: [{ error: RescueErrors.instanceDied('reconnecting') }],
      });
    });

    it('forgets a missing lock that is held again by the next sweep, however long after', async () => {
      const key = await instance('back', { live: false });
      const job = await seedRunning(exec, { instanceId: 'back' });
      const firstSweep = Date.now();
      expect(await task.run()).toBe(0);
      await holdLock(key); // the instance reconnected and took its lock back
      const { confirmAfter } = livenessTiming(OPTIONS.orphanSweepInterval);
      await waitFor(async () => Date.now() > firstSweep + confirmAfter, 15_000, 'the confirmation delay to pass');
      expect(await task.run()).toBe(0);
      await lockHolders.pop()!.end(); // lost again: a new suspicion, not the old one
      await waitFor(
        async () =>
          (await exec(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = $1`, [key]))[0]
            .n === 0,
        15_000,
        'the lock to be released',
      );
      expect(await task.run()).toBe(0);
      expect(await readJob(exec, job.id)).toMatchObject({ state: 'running', errors: [] });
    });

    it('counts an instance dead once its session closes', async () => {
      await instance('mortal', { live: true });
      const job = await seedRunning(exec, { instanceId: 'mortal' });
      expect(await task.run()).toBe(0);
      await lockHolders.pop()!.end();
      // PostgreSQL releases the lock as the backend exits, which can trail the client's end() a little.
      let rescued = 0;
      await waitFor(async () => (rescued = await task.run()) > 0, 15_000, 'the closed session to count as dead');
      expect(rescued).toBe(1);
      expect(await readJob(exec, job.id)).toMatchObject({
        state: 'retryable',
        errors: [{ error: RescueErrors.instanceDied('mortal') }],
      });
    });

    // Last in this block: it cuts the app's own session.
    it('after its own session reconnects, waits out the grace period before trusting missing locks', async () => {
      await instance('dead', { live: false });
      const job = await seedRunning(exec, { instanceId: 'dead' });
      const session = app.get(InstanceSession, { strict: false });
      const [{ done }] = await exec(
        `SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = $1`,
        [`awa:${session.id}`],
      );
      expect(done).toBe(true);
      await waitFor(
        async () => session.reconnectedWithin(ORPHAN_SWEEP_GRACE_MS) && session.connected,
        15_000,
        'the session to reconnect',
      );
      // run() checks the grace period synchronously, before its first await; if we are still within it
      // right after the call, so was run(). (On a very slow machine the grace may be over already.)
      const pending = task.run();
      if (session.reconnectedWithin(ORPHAN_SWEEP_GRACE_MS)) {
        expect(await pending).toBe(0);
        expect(await readJob(exec, job.id)).toMatchObject({ state: 'running' });
      } else {
        await pending;
      }
      const rescued = async () => (await readJob(exec, job.id))!.state !== 'running' || (await task.run()) > 0;
      await waitFor(rescued, ORPHAN_SWEEP_GRACE_MS + 15_000, 'the rescue once the grace period is over');
      expect(await readJob(exec, job.id)).toMatchObject({ errors: [{ error: RescueErrors.instanceDied('dead') }] });
    });
  });

  describe('with the heartbeat liveness probe', () => {
    const task = useApp({ livenessProbe: 'heartbeat' }).task(OrphanRescueTask);

    it('goes by the row age alone: a fresh row without a lock is alive, a stale one is dead', async () => {
      await instance('fresh-no-lock', { live: false });
      await instance('stale-with-lock', { live: true, ageMs: 31_000 });
      const fresh = await seedRunning(exec, { instanceId: 'fresh-no-lock' });
      const stale = await seedRunning(exec, { instanceId: 'stale-with-lock' });
      expect(await task.run()).toBe(1);
      expect(await readJob(exec, fresh.id)).toMatchObject({ state: 'running' });
      expect(await readJob(exec, stale.id)).toMatchObject({
        state: 'retryable',
        errors: [{ error: RescueErrors.instanceDied('stale-with-lock') }],
      });
      expect(await instanceIds()).toEqual(['fresh-no-lock']);
    });
  });
});
