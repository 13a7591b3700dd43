import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type AwaModuleOptions } from 'nestjs-awa';
import { VACUUM_MIN_DEAD_ROWS } from '../../lib/maintenance/tasks/hot-table-vacuum.task.js';
import { jobsStatistics } from '../support/jobs-statistics.js';
import { PgBouncer, pgbouncerMissing } from '../support/pgbouncer.js';
import { adminUrl, createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp, waitFor } from '../support/test-app.js';

const missing = pgbouncerMissing();
if (missing) process.stdout.write(`[awa tests] PgBouncer tests skipped: ${missing}\n`);

@Injectable()
class Ticks {
  ran = 0;
  @JobHandler('pool.tick')
  async tick() {
    this.ran++;
  }
}

const OPTIONS: AwaModuleOptions = {
  ...FAST_OPTIONS,
  heartbeatStaleAfter: 4_000,
  connectionMode: 'transaction-pooler',
  scheduleInterval: 200,
  schedules: [{ name: 'every-second', cron: '* * * * * *', kind: 'pool.tick', args: {} }],
};

/**
 * connectionMode 'transaction-pooler' with a pg Pool of one connection: every leader task (the
 * schedule tick included) runs on the fenced transaction's connection, so the instance never waits
 * for a second connection while holding the fence, and fires, handlers and enqueues all go on.
 */
describe.each([
  ['straight to PostgreSQL', false],
  ['behind PgBouncer in transaction mode', true],
] as const)('a transaction-pooler instance with a pool of max 1, %s', (_, viaBouncer) => {
  const run = viaBouncer && missing ? it.skip : it;
  let db: TestDatabase;
  let bouncer: PgBouncer | undefined;
  let app: TestingModule | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    if (viaBouncer && !missing) bouncer = await PgBouncer.start(adminUrl());
  });
  afterAll(async () => {
    await app?.close();
    await bouncer?.stop();
    await db?.drop();
  });

  run('enqueues the fires of its schedule, runs them, and completes an enqueue meanwhile', async () => {
    app = await startTestApp({
      url: bouncer ? bouncer.urlFor(db.url) : db.url,
      awa: OPTIONS,
      providers: [Ticks],
      poolMax: 1,
    });
    const fires = async () =>
      (
        await queryOnce<{ n: number }>(
          db.url,
          `SELECT count(*)::int AS n FROM awa.all_jobs WHERE unique_key LIKE 'awa:schedule:every-second:%'`,
        )
      )[0]!.n;
    await waitFor(async () => (await fires()) >= 2 && app!.get(Ticks).ran >= 2, 20_000, 'fires that ran');

    let enqueued: string | undefined;
    void app
      .get(QueueProducer)
      .enqueue('pool.tick', {})
      .then((job) => (enqueued = job.id));
    const id = await waitFor(() => enqueued, 20_000, 'the enqueue');
    await waitFor(
      async () => (await app!.get(QueueProducer).getJob(id))?.state === 'completed',
      20_000,
      'the enqueued job to complete',
    );
    expect(await fires()).toBeGreaterThanOrEqual(2);
  });

  run('its leader analyzes awa.jobs again once the statistics take it for empty while jobs wait', async () => {
    await queryOnce(db.url, 'ALTER TABLE awa.jobs SET (autovacuum_enabled = false)'); // only the leader's ANALYZE
    const stats = jobsStatistics(() => db.url);
    const planned = async () =>
      (
        await queryOnce<{ n: number }>(
          db.url,
          `SELECT reltuples::int AS n FROM pg_class WHERE oid = 'awa.jobs'::regclass`,
        )
      )[0]!.n;
    await stats.analyzedWhileEmpty();
    expect(await planned()).toBeLessThan(10); // the schedule's fires
    await stats.insertJobs(5_000); // jobs of a kind no handler takes, in a queue nobody serves
    await waitFor(async () => (await planned()) >= 5_000, 20_000, 'the leader to analyze awa.jobs');
  });

  run(
    'its leader vacuums awa.active_leases once it gained many dead rows (outside the fenced transaction)',
    async () => {
      const vacuums = async () =>
        (
          await queryOnce<{ n: number }>(
            db.url,
            `SELECT vacuum_count::int AS n FROM pg_stat_user_tables WHERE relid = 'awa.active_leases'::regclass`,
          )
        )[0]!.n; // by hand only: autovacuum's are counted apart
      const before = await vacuums();
      await queryOnce(
        db.url,
        `INSERT INTO awa.active_leases (job_id, run_lease, instance_id) SELECT -g, 1, 'churn' FROM generate_series(1, $1::int) g`,
        [VACUUM_MIN_DEAD_ROWS * 2],
      );
      await queryOnce(db.url, `DELETE FROM awa.active_leases WHERE job_id < 0`);
      await waitFor(async () => (await vacuums()) > before, 20_000, 'the leader to vacuum awa.active_leases');
    },
  );
});
