import type { TestingModule } from '@nestjs/testing';
import { MaintenanceService, type RetentionOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { CleanupTask } from '../../lib/maintenance/tasks/cleanup.task.js';
import { seedJob, seedRunning, type Exec } from '../sql/sql-fixture.js';
import { createTestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

const MINUTE = 60_000;

describe('CleanupTask', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  /** An app with `retention` whose maintenance never runs by itself; rescueBatchSize 1 makes the cleanup batch 10. */
  function withApp(retention: RetentionOptions, body: (ctx: { task: () => CleanupTask; exec: Exec }) => void): void {
    let app: TestingModule;
    let exec: Exec;
    beforeAll(async () => {
      app = await startTestApp({
        url: db.url,
        awa: {
          heartbeatInterval: 1_000, heartbeatStaleAfter: 30_000, maintenanceInterval: 3_600_000, orphanSweepInterval: 3_600_000,
          rescueBatchSize: 1, retention,
        },
      });
      // The boot sweep runs once at start: wait for it, so only the task under test deletes seeded rows.
      await app.get(MaintenanceService).stop();
      const dataSource = app.get(DataSource);
      exec = (text, values) => dataSource.query(text, values);
    });
    afterAll(async () => {
      await app?.close();
    });
    beforeEach(async () => {
      await exec('TRUNCATE awa.jobs, awa.active_leases');
    });
    body({ task: () => app.get(CleanupTask, { strict: false }), exec: (text, values) => exec(text, values) });
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
    const ids = new Set((await exec('SELECT id::text FROM awa.jobs')).map((r) => r.id as string));
    return Object.keys(jobs).filter((name) => ids.has(jobs[name]!)).sort();
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
        const left = await exec(`SELECT round(extract(epoch FROM now() - finalized_at) / 3600)::int AS hours FROM awa.jobs ORDER BY 1`);
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
        expect(await remaining(exec, jobs)).toEqual(['available', 'cancelled 2h', 'cancelled 5m', 'failed 2h', 'failed 5m', 'running']);
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
