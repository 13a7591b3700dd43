import * as dashboardSql from '../../lib/dashboard/dashboard.sql.js';
import { instancesSql, jobEventsSql, queueCountsSql, workerSql } from '../../lib/sql/index.js';
import { seedJob, seedRunning } from '../support/job-factory.js';
import { useSqlFixture } from './sql-fixture.js';

/**
 * The ages the dashboard, QueueAdmin and the durable events' lag show (msAgo). A reading's
 * transaction can start before a write that commits ahead of its snapshot: PostgreSQL fixes now()
 * when the statement's transaction starts, and a loaded server plans the statement in between (a CI
 * run showed an instance's heartbeat age as -22 ms). These ages are taken from the clock at
 * execution, after the snapshot, so none is negative. Each reading below runs in a transaction that
 * starts first, as such a statement's does.
 */
describe('ages read for display', () => {
  const f = useSqlFixture();

  /** Runs `read` on a session whose transaction began before `write` committed. */
  async function readAfter<T>(write: () => Promise<unknown>, read: (reader: import('pg').Client) => Promise<T>) {
    const reader = await f.client();
    await reader.query('BEGIN');
    try {
      await reader.query('SELECT now()'); // the reading's now() is fixed from here
      await write();
      return await read(reader);
    } finally {
      await reader.query('ROLLBACK');
    }
  }

  it("dashboard: an instance's and a lease's heartbeat that committed after the reading began are not younger than zero", async () => {
    await f.run(instancesSql.upsertInstance, ['i-1', 'host', 4242, ['default'], 4_242, '{}', '{}', null]);
    const { id } = await seedRunning(f.sql, { instanceId: 'i-1' });
    const [instance, lease] = await readAfter(
      async () => {
        await f.sql(`UPDATE awa.instances SET heartbeat_at = now() WHERE id = 'i-1'`);
        await f.sql(`UPDATE awa.active_leases SET heartbeat_at = now() WHERE job_id = $1`, [id]);
      },
      async (reader) => [
        (await f.run(dashboardSql.listInstances, [], reader))[0],
        (await f.run(dashboardSql.jobLease, [id], reader))[0],
      ],
    );
    expect(instance).toMatchObject({ id: 'i-1' });
    expect(instance!.heartbeat_age_ms).toBeGreaterThanOrEqual(0);
    expect(lease).toMatchObject({ instance_id: 'i-1' });
    expect(lease!.heartbeat_age_ms).toBeGreaterThanOrEqual(0);
  });

  it('queue counts: a job made available after the reading began is not waiting less than zero', async () => {
    const rows = await readAfter(
      () => seedJob(f.sql, { queue: 'q-ages' }),
      (reader) => f.run(queueCountsSql.queueWaitingCounts, [['q-ages']], reader),
    );
    const available = rows.find((r) => r.name === 'q-ages' && r.state === 'available');
    expect(available).toMatchObject({ count: 1 });
    expect(available!.oldest_available_ms).toBeGreaterThanOrEqual(0);
  });

  it("durable events: a group's lag behind an event stored after the reading began is not below zero", async () => {
    await f.run(jobEventsSql.storeSubscriptions, ['g', ['completed'], ['*'], ['%'], ['*']]);
    const [lag] = await readAfter(
      async () => {
        const job = await seedRunning(f.sql);
        await f.run(workerSql.completeJobs, [[job.id], [job.runLease]]);
      },
      (reader) => f.run(jobEventsSql.groupLag, [1000], reader),
    );
    expect(lag).toMatchObject({ group: 'g', lag_events: 1 });
    expect(lag!.lag_ms).toBeGreaterThanOrEqual(0);
  });
});
