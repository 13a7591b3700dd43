import { jobsSql, workerSql } from '../../lib/sql/index.js';
import { queueDepths } from '../../lib/telemetry/telemetry.sql.js';
import { seedJob, seedRunning } from '../support/job-factory.js';
import { useSqlFixture } from '../sql/sql-fixture.js';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** The statements of the OpenTelemetry integration, and its traceparent column through insert and claim. */
describe('telemetry.sql', () => {
  const f = useSqlFixture();

  describe('queueDepths', () => {
    it('counts unfinished jobs by queue and state (running: by lease), with the oldest available age', async () => {
      await seedJob(f.sql, { queue: 'a', state: 'available', runAtMs: -60_000 });
      await seedJob(f.sql, { queue: 'a', state: 'available', runAtMs: -1_000 });
      await seedJob(f.sql, { queue: 'a', state: 'scheduled', runAtMs: 60_000 });
      await seedJob(f.sql, { queue: 'b', state: 'retryable', runAtMs: 60_000 });
      await seedRunning(f.sql, { queue: 'b' });
      for (const state of ['completed', 'failed', 'cancelled'])
        await seedJob(f.sql, { queue: 'a', state, finalizedAtMs: -1 });

      const rows = await f.run(queueDepths);
      const byKey = Object.fromEntries(rows.map((r) => [`${r.queue}/${r.state}`, r]));
      expect(Object.keys(byKey).sort()).toEqual(['a/available', 'a/scheduled', 'b/retryable', 'b/running']);
      expect(byKey['a/available']!.count).toBe(2);
      expect(byKey['a/available']!.oldest_available_s).toBeGreaterThanOrEqual(59);
      expect(byKey['a/available']!.oldest_available_s).toBeLessThan(3_600);
      expect(byKey['a/scheduled']).toMatchObject({ count: 1, oldest_available_s: null });
      expect(byKey['b/running']).toMatchObject({ count: 1, oldest_available_s: null });
    });

    it('returns nothing when no job is waiting or running', async () => {
      await seedJob(f.sql, { state: 'completed', finalizedAtMs: -1 });
      expect(await f.run(queueDepths)).toEqual([]);
    });
  });

  describe('traceparent', () => {
    const job = (kind: string, extra: object = {}) => ({
      kind,
      queue: 'default',
      args: {},
      priority: 0,
      max_attempts: 3,
      run_at: null,
      ...extra,
    });

    it('is stored by insertJobs when the payload carries it, and left null when it does not', async () => {
      const [traced, plain] = await f.run(jobsSql.insertJobs, [
        JSON.stringify([job('traced', { traceparent: TRACEPARENT }), job('plain')]),
      ]);
      const rows = await f.sql('SELECT id::text, traceparent FROM awa.all_jobs ORDER BY id');
      expect(rows).toEqual([
        { id: traced!.id, traceparent: TRACEPARENT },
        { id: plain!.id, traceparent: null },
      ]);
    });

    it('comes back from the claim with run_at in epoch ms', async () => {
      await f.run(jobsSql.insertJobs, [JSON.stringify([job('traced', { traceparent: TRACEPARENT })])]);
      const [due] = await f.sql(`SELECT (extract(epoch FROM run_at) * 1000)::float8 AS ms FROM awa.all_jobs`);
      const [claimed] = await f.run(workerSql.claimJobs, ['default', ['traced'], 1, 'instance-t', 0]);
      expect(claimed).toMatchObject({ traceparent: TRACEPARENT, run_at_ms: due.ms });
    });
  });
});
