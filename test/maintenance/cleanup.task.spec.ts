import type { RetentionOptions } from 'nestjs-awa';
import { CleanupTask } from '../../lib/maintenance/tasks/cleanup.task.js';
import { seedJob, seedRunning, type Exec } from '../support/job-factory.js';
import { useQuietApp, useTestDatabase } from './quiet-app.js';

const MINUTE = 60_000;

describe('CleanupTask', () => {
  const db = useTestDatabase();

  /** An app with `retention` whose maintenance never runs by itself; rescueBatchSize 1 makes the cleanup batch 10. */
  function withApp(retention: RetentionOptions, body: (ctx: { task: () => CleanupTask; exec: Exec }) => void): void {
    const ctx = useQuietApp({ rescueBatchSize: 1, retention }, { database: db });
    body({ task: () => ctx.app.get(CleanupTask, { strict: false }), exec: ctx.exec });
  }

  /** Finished jobs of each final state, finalized 5 min and 2 h ago, and unfinished ones. */
  async function seedAll(exec: Exec): Promise<Record<string, string>> {
    const jobs: Record<string, string> = {};
    for (const state of ['completed', 'failed', 'cancelled']) {
      jobs[`${state} 5m`] = await seedJob(exec, { state, attempt: 1, finalizedAtMs: -5 * MINUTE });
      jobs[`${state} 2h`] = await seedJob(exec, { state, attempt: 1, finalizedAtMs: -120 * MINUTE });
    }
    jobs.available = await seedJob(exec, { runAtMs: -300 * MINUTE });
    jobs.running = (await seedRunning(exec, { runAtMs: -300 * MINUTE })).id;
    return jobs;
  }
  async function remaining(exec: Exec, jobs: Record<string, string>): Promise<string[]> {
    const ids = new Set((await exec('SELECT id::text FROM awa.all_jobs')).map((r) => r.id as string));
    return Object.keys(jobs)
      .filter((name) => ids.has(jobs[name]!))
      .sort();
  }

  describe('with both retentions', () => {
    withApp({ completed: MINUTE, failed: 60 * MINUTE }, ({ task, exec }) => {
      it('deletes completed jobs past their retention, and failed and cancelled ones past theirs', async () => {
        const jobs = await seedAll(exec);
        expect(await task().run()).toBe(4);
        expect(await remaining(exec, jobs)).toEqual(['available', 'cancelled 5m', 'failed 5m', 'running']);
        expect(await task().run()).toBe(0);
      });

      it('deletes at most 10 × rescueBatchSize jobs per run, oldest first', async () => {
        await exec(`INSERT INTO awa.jobs (kind, state, attempt, finalized_at)
                    SELECT 'k', 'completed', 1, now() - i * interval '1 hour' FROM generate_series(1, 12) i`);
        expect(await task().run()).toBe(10);
        const left = await exec(
          `SELECT round(extract(epoch FROM now() - finalized_at) / 3600)::int AS hours FROM awa.all_jobs ORDER BY 1`,
        );
        expect(left).toEqual([{ hours: 1 }, { hours: 2 }]);
        expect(await task().run()).toBe(2);
        expect(await task().run()).toBe(0);
      });
    });
  });

  describe('with completed retention 0', () => {
    withApp({ completed: 0, failed: MINUTE }, ({ task, exec }) => {
      it('keeps completed jobs forever and still deletes failed and cancelled ones', async () => {
        const jobs = await seedAll(exec);
        expect(await task().run()).toBe(4);
        expect(await remaining(exec, jobs)).toEqual(['available', 'completed 2h', 'completed 5m', 'running']);
      });
    });
  });

  describe('with failed retention 0', () => {
    withApp({ completed: MINUTE, failed: 0 }, ({ task, exec }) => {
      it('keeps failed and cancelled jobs forever and still deletes completed ones', async () => {
        const jobs = await seedAll(exec);
        expect(await task().run()).toBe(2);
        expect(await remaining(exec, jobs)).toEqual([
          'available',
          'cancelled 2h',
          'cancelled 5m',
          'failed 2h',
          'failed 5m',
          'running',
        ]);
      });
    });
  });

  describe('with both retentions 0', () => {
    withApp({ completed: 0, failed: 0 }, ({ task, exec }) => {
      it('deletes nothing', async () => {
        const jobs = await seedAll(exec);
        expect(await task().run()).toBe(0);
        expect(await remaining(exec, jobs)).toHaveLength(Object.keys(jobs).length);
      });
    });
  });
});
