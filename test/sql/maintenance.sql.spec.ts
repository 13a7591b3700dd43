import { RescueErrors } from '../../lib/awa.messages.js';
import { jobsSql, maintenanceSql, workerSql } from '../../lib/sql/index.js';
import type { RescueParams } from '../../lib/sql/maintenance.sql.js';
import { leasesOf, listen, readJob, statementsOf, useSqlFixture, type SqlFixture } from './sql-fixture.js';
import { seedJob, seedLease, seedRunning } from '../support/job-factory.js';
import { waitFor } from '../support/wait-for.js';

const HOUR = 3_600_000;

/**
 * $1..$6 of every rescue statement: queue 'fast' retries after exactly 10 s, any other queue after
 * exactly 60 s (base = cap, so the jitter is capped away and delays can be compared exactly).
 */
const rescueParams = (batch = 500): RescueParams => [['fast'], [10_000], [10_000], 60_000, 60_000, batch];

/** The leader's statements: the three rescues, promotion and cleanup. */
describe('maintenance.sql', () => {
  const f = useSqlFixture();

  const byId = (rows: Array<{ id: string; state: string }>) => Object.fromEntries(rows.map((r) => [r.id, r.state]));
  const staleRescue = (batch = 500, staleAfterMs = 60_000) =>
    f.run(maintenanceSql.rescueStaleHeartbeats, [...rescueParams(batch), staleAfterMs, 'heartbeat stale: test']);
  const deadlineRescue = (batch = 500) =>
    f.run(maintenanceSql.rescueExpiredDeadlines, [...rescueParams(batch), 'deadline: test']);
  const orphanRescue = (instances: string[], batch = 500) =>
    f.run(maintenanceSql.rescueOrphanedLeases, [...rescueParams(batch), instances, RescueErrors.instanceDiedPrefix]);

  describe('rescueStaleHeartbeats', () => {
    it('rescues leases older than the threshold: lease deleted, error appended, retry per queue settings', async () => {
      const fast = await seedRunning(f.sql, { queue: 'fast', heartbeatAgeMs: HOUR, maxAttempts: 5 });
      const other = await seedRunning(f.sql, {
        queue: 'unknown',
        heartbeatAgeMs: HOUR,
        attempt: 2,
        runLease: 4,
        maxAttempts: 5,
      });
      const fresh = await seedRunning(f.sql, { heartbeatAgeMs: 30_000 });
      const rows = await staleRescue();
      expect(byId(rows)).toEqual({ [fast.id]: 'retryable', [other.id]: 'retryable' });

      const a = await readJob(f.sql, fast.id);
      expect(a).toMatchObject({
        state: 'retryable',
        attempt: 1,
        run_lease: '1',
        errors: [{ attempt: 1, error: 'heartbeat stale: test' }],
      });
      expect(a!.retry_delay_ms).toBeCloseTo(10_000, 3);
      const b = await readJob(f.sql, other.id);
      expect(b).toMatchObject({
        state: 'retryable',
        attempt: 2,
        errors: [{ attempt: 2, error: 'heartbeat stale: test' }],
      });
      expect(b!.retry_delay_ms).toBeCloseTo(60_000, 3);
      expect(await leasesOf(f.sql, fast.id)).toEqual([]);
      expect(await leasesOf(f.sql, other.id)).toEqual([]);

      expect(await readJob(f.sql, fresh.id)).toMatchObject({ state: 'running', errors: [] });
      expect(await leasesOf(f.sql, fresh.id)).toEqual(['1@instance-a']);
      expect(await staleRescue()).toEqual([]);
    });

    it('fails the job for good when its attempts are spent', async () => {
      const job = await seedRunning(f.sql, { heartbeatAgeMs: HOUR, attempt: 3, maxAttempts: 3 });
      expect(byId(await staleRescue())).toEqual({ [job.id]: 'failed' });
      const row = await readJob(f.sql, job.id);
      expect(row).toMatchObject({ state: 'failed', errors: [{ attempt: 3, error: 'heartbeat stale: test' }] });
      expect(row!.finalized_at).toBeInstanceOf(Date);
    });

    it('takes at most the batch size per call, oldest heartbeat first', async () => {
      const jobs = [];
      for (const hours of [3, 5, 1, 4, 2])
        jobs.push({ hours, ...(await seedRunning(f.sql, { heartbeatAgeMs: hours * HOUR })) });
      const oldestFirst = [...jobs].sort((x, y) => y.hours - x.hours).map((j) => j.id);
      expect(Object.keys(byId(await staleRescue(2))).sort()).toEqual(oldestFirst.slice(0, 2).sort());
      expect(Object.keys(byId(await staleRescue(2))).sort()).toEqual(oldestFirst.slice(2, 4).sort());
      expect(Object.keys(byId(await staleRescue(2)))).toEqual(oldestFirst.slice(4));
      expect(await staleRescue(2)).toEqual([]);
    });

    it('deletes a leftover lease whose job moved on, and leaves that job alone', async () => {
      const id = await seedJob(f.sql, { state: 'completed', attempt: 1, runLease: 1, finalizedAtMs: -1_000 });
      await seedLease(f.sql, id, 1, { heartbeatAgeMs: HOUR });
      expect(await staleRescue()).toEqual([]);
      expect(await leasesOf(f.sql, id)).toEqual([]);
      expect(await readJob(f.sql, id)).toMatchObject({ state: 'completed', errors: [] });
    });
  });

  describe('rescueExpiredDeadlines', () => {
    it('rescues leases past their deadline, even with a fresh heartbeat; not future or NULL deadlines', async () => {
      const expired = await seedRunning(f.sql, { queue: 'fast', deadlineInMs: -1_000, maxAttempts: 2 });
      const last = await seedRunning(f.sql, { deadlineInMs: -1_000, attempt: 2, maxAttempts: 2 });
      const future = await seedRunning(f.sql, { deadlineInMs: HOUR, heartbeatAgeMs: HOUR });
      const none = await seedRunning(f.sql, { deadlineInMs: null, heartbeatAgeMs: HOUR });
      expect(byId(await deadlineRescue())).toEqual({ [expired.id]: 'retryable', [last.id]: 'failed' });
      const row = await readJob(f.sql, expired.id);
      expect(row).toMatchObject({ errors: [{ attempt: 1, error: 'deadline: test' }] });
      expect(row!.retry_delay_ms).toBeCloseTo(10_000, 3);
      expect(await readJob(f.sql, last.id)).toMatchObject({
        state: 'failed',
        errors: [{ attempt: 2, error: 'deadline: test' }],
      });
      for (const job of [future, none]) {
        expect(await readJob(f.sql, job.id)).toMatchObject({ state: 'running', errors: [] });
        expect(await leasesOf(f.sql, job.id)).toEqual(['1@instance-a']);
      }
    });

    it('takes at most the batch size per call, earliest deadline first', async () => {
      const jobs = [];
      for (const minutes of [2, 9, 4, 7])
        jobs.push({ minutes, ...(await seedRunning(f.sql, { deadlineInMs: -minutes * 60_000 })) });
      const earliestFirst = [...jobs].sort((x, y) => y.minutes - x.minutes).map((j) => j.id);
      expect(Object.keys(byId(await deadlineRescue(3))).sort()).toEqual(earliestFirst.slice(0, 3).sort());
      expect(Object.keys(byId(await deadlineRescue(3)))).toEqual(earliestFirst.slice(3));
    });
  });

  describe('rescueOrphanedLeases', () => {
    it('rescues every lease of the given instances, naming the instance in the error', async () => {
      const a1 = await seedRunning(f.sql, { instanceId: 'dead-1', queue: 'fast' });
      const a2 = await seedRunning(f.sql, { instanceId: 'dead-1', attempt: 4, maxAttempts: 4 });
      const b = await seedRunning(f.sql, { instanceId: 'dead-2' });
      const live = await seedRunning(f.sql, { instanceId: 'live-1', heartbeatAgeMs: HOUR, deadlineInMs: -1_000 });
      expect(byId(await orphanRescue(['dead-1', 'dead-2', 'never-seen']))).toEqual({
        [a1.id]: 'retryable',
        [a2.id]: 'failed',
        [b.id]: 'retryable',
      });
      expect(await readJob(f.sql, a1.id)).toMatchObject({
        errors: [{ attempt: 1, error: 'worker instance died: dead-1' }],
      });
      expect((await readJob(f.sql, a1.id))!.retry_delay_ms).toBeCloseTo(10_000, 3);
      expect(await readJob(f.sql, a2.id)).toMatchObject({
        errors: [{ attempt: 4, error: 'worker instance died: dead-1' }],
      });
      expect(await readJob(f.sql, b.id)).toMatchObject({
        errors: [{ attempt: 1, error: 'worker instance died: dead-2' }],
      });
      // A live instance's lease is not this statement's business, however stale it looks.
      expect(await readJob(f.sql, live.id)).toMatchObject({ state: 'running', errors: [] });
      expect(await f.sql(`SELECT instance_id FROM awa.active_leases`)).toEqual([{ instance_id: 'live-1' }]);
    });

    it(
      'writes the error prefix it is given ($8), then the instance id: ' + 'the text lives in the messages module only',
      async () => {
        const job = await seedRunning(f.sql, { instanceId: 'dead-1' });
        await f.run(maintenanceSql.rescueOrphanedLeases, [...rescueParams(), ['dead-1'], 'gone: ']);
        expect(await readJob(f.sql, job.id)).toMatchObject({ errors: [{ attempt: 1, error: 'gone: dead-1' }] });
        expect(maintenanceSql.rescueOrphanedLeases.text).not.toContain(RescueErrors.instanceDiedPrefix);
      },
    );

    it('takes at most the batch size per call', async () => {
      for (let i = 0; i < 5; i++) await seedRunning(f.sql, { instanceId: 'dead-1' });
      expect(await orphanRescue(['dead-1'], 2)).toHaveLength(2);
      expect(await orphanRescue(['dead-1'], 2)).toHaveLength(2);
      expect(await orphanRescue(['dead-1'], 2)).toHaveLength(1);
      expect(await orphanRescue(['dead-1'], 2)).toEqual([]);
    });
  });

  describe('a completion racing a rescue: whichever runs second changes nothing', () => {
    // completeJobs returns the attempts it did not complete: [] when it completed the job.
    const complete = (job: { id: string; runLease: string }, on?: Parameters<SqlFixture['run']>[2]) =>
      f.run(workerSql.completeJobs, [[job.id], [job.runLease]], on);
    const missed = (job: { id: string; runLease: string }) => [{ id: job.id, run_lease: job.runLease }];

    it('rescue first: the late completion is fenced out', async () => {
      const job = await seedRunning(f.sql, { heartbeatAgeMs: HOUR });
      expect(byId(await staleRescue())).toEqual({ [job.id]: 'retryable' });
      expect(await complete(job)).toEqual(missed(job));
      expect(await readJob(f.sql, job.id)).toMatchObject({ state: 'retryable', finalized_at: null });
    });

    it('completion first: the rescue finds nothing', async () => {
      const job = await seedRunning(f.sql, { heartbeatAgeMs: HOUR, deadlineInMs: -1_000, instanceId: 'dead-1' });
      expect(await complete(job)).toEqual([]);
      expect(await staleRescue()).toEqual([]);
      expect(await deadlineRescue()).toEqual([]);
      expect(await orphanRescue(['dead-1'])).toEqual([]);
      expect(await readJob(f.sql, job.id)).toMatchObject({ state: 'completed', errors: [] });
    });

    it('a completion blocked behind an uncommitted rescue misses its attempt once the rescue commits', async () => {
      const job = await seedRunning(f.sql, { heartbeatAgeMs: HOUR });
      const rescuer = await f.client();
      const completer = await f.client();
      const completerPid = (await completer.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
      await rescuer.query('BEGIN');
      const rescued = await f.run(
        maintenanceSql.rescueStaleHeartbeats,
        [...rescueParams(), 60_000, 'heartbeat stale: test'],
        rescuer,
      );
      expect(rescued).toHaveLength(1);
      const late = complete(job, completer);
      await waitFor(
        async () =>
          (await f.sql(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [completerPid]))
            .length > 0,
        15_000,
        "the completion to wait on the rescue's row lock",
      );
      await rescuer.query('COMMIT');
      expect(await late).toEqual(missed(job));
      expect(await readJob(f.sql, job.id)).toMatchObject({
        state: 'retryable',
        errors: [{ error: 'heartbeat stale: test' }],
      });
    });

    it('a rescue running while a completion is uncommitted skips the lease, and the completion stands', async () => {
      const job = await seedRunning(f.sql, { heartbeatAgeMs: HOUR });
      const completer = await f.client();
      await completer.query('BEGIN');
      expect(await complete(job, completer)).toEqual([]);
      // SKIP LOCKED: the rescue neither waits nor takes the lease the completion holds.
      expect(await staleRescue()).toEqual([]);
      await completer.query('COMMIT');
      expect(await staleRescue()).toEqual([]);
      expect(await readJob(f.sql, job.id)).toMatchObject({ state: 'completed', errors: [] });
    });

    it('two rescues at once never take the same lease', async () => {
      for (let i = 0; i < 6; i++) await seedRunning(f.sql, { heartbeatAgeMs: HOUR + i });
      const first = await f.client();
      await first.query('BEGIN');
      const a = await f.run(maintenanceSql.rescueStaleHeartbeats, [...rescueParams(4), 60_000, 'first'], first);
      const b = await f.run(maintenanceSql.rescueStaleHeartbeats, [...rescueParams(10), 60_000, 'second']);
      await first.query('COMMIT');
      expect(a).toHaveLength(4);
      expect(b).toHaveLength(2);
      expect(new Set([...a, ...b].map((r) => r.id)).size).toBe(6);
      expect(await f.sql(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE jsonb_array_length(errors) = 1`)).toEqual([
        { n: 6 },
      ]);
    });
  });

  describe('promoteDueJobs', () => {
    it('makes due scheduled and retryable jobs available, counts them and NOTIFYs each queue once', async () => {
      const notes = await listen(await f.client(), 'awa_jobs');
      const due = [
        await seedJob(f.sql, { state: 'scheduled', queue: 'alpha', runAtMs: -1_000 }),
        await seedJob(f.sql, { state: 'retryable', queue: 'alpha', runAtMs: -10, attempt: 1, runLease: 1 }),
        await seedJob(f.sql, { state: 'scheduled', queue: 'beta', runAtMs: -HOUR }),
      ];
      const notDue = [
        await seedJob(f.sql, { state: 'scheduled', queue: 'gamma', runAtMs: HOUR }),
        await seedJob(f.sql, { state: 'retryable', queue: 'gamma', runAtMs: HOUR, attempt: 1, runLease: 1 }),
      ];
      const others = await Promise.all(
        ['available', 'running', 'completed', 'failed', 'cancelled'].map((state) =>
          seedJob(f.sql, { state, queue: 'delta', runAtMs: -HOUR }),
        ),
      );
      await notes.take(f.sql); // the insert trigger's own notification for the available seed
      expect(await f.run(maintenanceSql.promoteDueJobs, [100])).toEqual([{ promoted: 3, queues: 2 }]);
      expect((await notes.take(f.sql)).sort()).toEqual(['alpha', 'beta']);
      for (const id of due) expect(await readJob(f.sql, id)).toMatchObject({ state: 'available' });
      expect((await readJob(f.sql, notDue[0]!))!.state).toBe('scheduled');
      expect((await readJob(f.sql, notDue[1]!))!.state).toBe('retryable');
      const states = await f.sql(`SELECT state FROM awa.all_jobs WHERE id = ANY($1::bigint[]) ORDER BY state`, [
        others,
      ]);
      expect(states.map((s) => s.state)).toEqual(['available', 'cancelled', 'completed', 'failed', 'running']);

      expect(await f.run(maintenanceSql.promoteDueJobs, [100])).toEqual([{ promoted: 0, queues: 0 }]);
      expect(await notes.take(f.sql)).toEqual([]);
    });

    it('promotes at most the limit per call, earliest run_at first', async () => {
      const jobs = [];
      for (const minutes of [3, 1, 5, 2, 4])
        jobs.push({ minutes, id: await seedJob(f.sql, { state: 'scheduled', runAtMs: -minutes * 60_000 }) });
      const earliestFirst = [...jobs].sort((x, y) => y.minutes - x.minutes).map((j) => j.id);
      expect(await f.run(maintenanceSql.promoteDueJobs, [2])).toEqual([{ promoted: 2, queues: 1 }]);
      const available = await f.sql(`SELECT id::text FROM awa.all_jobs WHERE state = 'available' ORDER BY all_jobs.id`);
      expect(available.map((r) => r.id)).toEqual(earliestFirst.slice(0, 2).sort((x, y) => Number(x) - Number(y)));
      expect(await f.run(maintenanceSql.promoteDueJobs, [2])).toEqual([{ promoted: 2, queues: 1 }]);
      expect(await f.run(maintenanceSql.promoteDueJobs, [2])).toEqual([{ promoted: 1, queues: 1 }]);
    });
  });

  describe('deleteFinishedJobs', () => {
    /** completed/failed/cancelled jobs finalized 30 min and 2 h ago, and two unfinished ones. */
    async function seedFinished(): Promise<Record<string, string>> {
      const jobs: Record<string, string> = {};
      for (const state of ['completed', 'failed', 'cancelled']) {
        jobs[`${state} 30m`] = await seedJob(f.sql, { state, attempt: 1, finalizedAtMs: -30 * 60_000 });
        jobs[`${state} 2h`] = await seedJob(f.sql, { state, attempt: 1, finalizedAtMs: -2 * HOUR });
      }
      jobs.running = (await seedRunning(f.sql, { runAtMs: -3 * HOUR })).id;
      jobs.retryable = await seedJob(f.sql, { state: 'retryable', attempt: 1, runAtMs: -3 * HOUR });
      return jobs;
    }
    const left = async (jobs: Record<string, string>) => {
      const ids = new Set((await f.sql('SELECT id::text FROM awa.all_jobs')).map((r) => r.id as string));
      return Object.keys(jobs)
        .filter((k) => ids.has(jobs[k]!))
        .sort();
    };

    it(
      'deletes completed jobs past the completed retention and failed ' + 'or cancelled ones past the failed retention',
      async () => {
        const jobs = await seedFinished();
        expect(await f.execute(maintenanceSql.deleteFinishedJobs, [HOUR, 3 * HOUR, 100])).toBe(1);
        expect(await left(jobs)).toEqual([
          'cancelled 2h',
          'cancelled 30m',
          'completed 30m',
          'failed 2h',
          'failed 30m',
          'retryable',
          'running',
        ]);
        expect(await f.execute(maintenanceSql.deleteFinishedJobs, [3 * HOUR, 10 * 60_000, 100])).toBe(4);
        expect(await left(jobs)).toEqual(['completed 30m', 'retryable', 'running']);
      },
    );

    it('keeps completed jobs forever when their retention is NULL', async () => {
      const jobs = await seedFinished();
      expect(await f.execute(maintenanceSql.deleteFinishedJobs, [null, HOUR, 100])).toBe(2);
      expect(await left(jobs)).toEqual([
        'cancelled 30m',
        'completed 2h',
        'completed 30m',
        'failed 30m',
        'retryable',
        'running',
      ]);
    });

    it('keeps failed and cancelled jobs forever when their retention is NULL', async () => {
      const jobs = await seedFinished();
      expect(await f.execute(maintenanceSql.deleteFinishedJobs, [60_000, null, 100])).toBe(2);
      expect(await left(jobs)).toEqual([
        'cancelled 2h',
        'cancelled 30m',
        'failed 2h',
        'failed 30m',
        'retryable',
        'running',
      ]);
    });

    it('keeps everything when both retentions are NULL', async () => {
      const jobs = await seedFinished();
      expect(await f.execute(maintenanceSql.deleteFinishedJobs, [null, null, 100])).toBe(0);
      expect(await left(jobs)).toHaveLength(Object.keys(jobs).length);
    });

    it('deletes at most the limit per call, oldest first', async () => {
      const ids = [];
      for (const minutes of [50, 10, 40, 20, 30])
        ids.push({ minutes, id: await seedJob(f.sql, { state: 'completed', finalizedAtMs: -minutes * 60_000 }) });
      expect(await f.execute(maintenanceSql.deleteFinishedJobs, [60_000, 60_000, 2])).toBe(2);
      const remaining = (await f.sql('SELECT id::text FROM awa.all_jobs')).map((r) => r.id).sort();
      expect(remaining).toEqual(
        ids
          .filter((j) => j.minutes <= 30)
          .map((j) => j.id)
          .sort(),
      );
    });
  });

  describe('a rescue of an attempt with a stored cancel request', () => {
    it('ends the job cancelled, never retryable, whichever rescue finds it', async () => {
      const stale = await seedRunning(f.sql, { heartbeatAgeMs: HOUR });
      const late = await seedRunning(f.sql, { deadlineInMs: -1_000 });
      const orphan = await seedRunning(f.sql, { instanceId: 'dead-1' });
      const plain = await seedRunning(f.sql, { instanceId: 'dead-1' });
      for (const job of [stale, late, orphan]) await f.run(jobsSql.requestCancel, [job.id]);
      expect(byId(await staleRescue())).toEqual({ [stale.id]: 'cancelled' });
      expect(byId(await deadlineRescue())).toEqual({ [late.id]: 'cancelled' });
      expect(byId(await orphanRescue(['dead-1']))).toEqual({ [orphan.id]: 'cancelled', [plain.id]: 'retryable' });
      const job = await readJob(f.sql, orphan.id);
      expect(job).toMatchObject({
        state: 'cancelled',
        attempt: 1,
        errors: [{ attempt: 1, error: 'worker instance died: dead-1' }],
      });
      expect(job!.finalized_at).toBeInstanceOf(Date);
    });
  });

  describe('findUnhandledKinds', () => {
    const unhandled = (limit = 50) => f.run(maintenanceSql.findUnhandledKinds, [60_000, limit]);
    async function instance(id: string, handlers: Record<string, string>, ageMs: number): Promise<void> {
      await f.sql(
        `INSERT INTO awa.instances (id, hostname, pid, lock_key, handlers, heartbeat_at)
                   VALUES ($1, 'h', 1, 1, $2::jsonb, now() - $3::float8 * interval '1 millisecond')`,
        [id, JSON.stringify(handlers), ageMs],
      );
    }

    it('counts the available jobs of each (queue, kind) that no fresh instance row handles in that queue', async () => {
      await instance('fresh', { a: 'q1', b: 'q2' }, 0);
      await instance('stale', { c: 'q1' }, HOUR);
      for (const [kind, queue, n] of [
        ['a', 'q1', 3],
        ['a', 'q2', 2],
        ['b', 'q2', 1],
        ['c', 'q1', 4],
        ['d', 'q1', 1],
      ] as const) {
        for (let i = 0; i < n; i++) await seedJob(f.sql, { kind, queue });
      }
      // Not available: not counted, and not reported on their own.
      await seedJob(f.sql, { kind: 'd', queue: 'q1', state: 'scheduled', runAtMs: HOUR });
      await seedJob(f.sql, { kind: 'e', queue: 'q1', state: 'completed', finalizedAtMs: -1 });
      await seedRunning(f.sql, { kind: 'f', queue: 'q1' });
      expect(await unhandled()).toEqual([
        { queue: 'q1', kind: 'c', count: 4 },
        { queue: 'q1', kind: 'd', count: 1 },
        { queue: 'q2', kind: 'a', count: 2 },
      ]);
      expect(await unhandled(2)).toHaveLength(2);
    });

    it('finds nothing in an empty table', async () => {
      expect(await unhandled()).toEqual([]);
    });
  });

  it('ran every statement of maintenance.sql', () => {
    expect(
      statementsOf(maintenanceSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
