import { DataSource } from 'typeorm';
import { adminBatchSql, adminSql, historySql, jobsSql, maintenanceSql, workerSql } from '../../lib/sql/index.js';
import { AwaJobHistory1764800000000 } from '../../migrations/index.js';
import { insertJobsRows, seedJob, seedRunning } from '../support/job-factory.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';
import { planNodes, readsOf } from '../support/query-plan.js';

/** Finished jobs move to awa.job_history in the statement that finishes them; retention rotates its rings. */
describe('job-history.sql', () => {
  const f = useSqlFixture();
  beforeEach(async () => {
    await f.sql('TRUNCATE awa.job_history');
    await f.sql(
      `UPDATE awa.history_rings SET segment = CASE class WHEN 'completed' THEN 0 ELSE 8 END, rotated_at = now()`,
    );
    await f.sql('UPDATE awa.history_segments SET sealed_at = NULL');
  });

  /** Where job `id` is: 'jobs', 'history <segment>', or 'nowhere'. */
  const whereIs = async (id: string): Promise<string> => {
    const [live] = await f.sql('SELECT state FROM awa.jobs WHERE id = $1', [id]);
    const [archived] = await f.sql('SELECT state, segment FROM awa.job_history WHERE id = $1', [id]);
    if (live && archived) return 'both';
    if (live) return `jobs ${live.state}`;
    if (archived) return `history ${archived.segment} ${archived.state}`;
    return 'nowhere';
  };
  const makeUnique = (id: string, states: string[]) =>
    f.sql('UPDATE awa.jobs SET unique_key = $2, unique_states = $3 WHERE id = $1', [id, `key-${id}`, states]);

  /** The plain completion, and the one for jobs in no workflow: both move jobs the same way. */
  const COMPLETIONS = [
    ['completeJobs', workerSql.completeJobs],
    ['completeJobsOutsideWorkflows', workerSql.completeJobsOutsideWorkflows],
  ] as const;

  describe('finishing statements', () => {
    it.each(COMPLETIONS)(
      'a completion (%s) moves the job into the current completed segment, its columns kept',
      async (_, completeJobs) => {
        const job = await seedRunning(f.sql, { args: { n: 1 } });
        await f.sql(`UPDATE awa.history_rings SET segment = 3 WHERE class = 'completed'`);
        expect(await f.run(completeJobs, [[job.id], [job.runLease]])).toEqual([]); // none missed
        expect(await whereIs(job.id)).toBe('history 3 completed');
        const [row] = await f.sql(
          'SELECT args, attempt, run_lease::text, finalized_at IS NOT NULL AS finalized FROM awa.job_history WHERE id = $1',
          [job.id],
        );
        expect(row).toEqual({ args: { n: 1 }, attempt: 1, run_lease: job.runLease, finalized: true });
      },
    );

    it.each(COMPLETIONS)(
      'a batch that all finishes (%s) looks each job up once: the rows that stay are sought only among those that did not move',
      async (_, completeJobs) => {
        const jobs = await Promise.all([1, 2, 3].map(() => seedRunning(f.sql)));
        const literal = (values: string[]) => `'{${values.join(',')}}'`;
        // Index scans only (as on a table of any size), each probe's rows counted, those filtered out too.
        const client = await f.client();
        await client.query('SET enable_seqscan = off');
        const {
          rows: [
            {
              'QUERY PLAN': [top],
            },
          ],
        } = await client.query(
          `EXPLAIN (ANALYZE, FORMAT JSON) ${completeJobs.text
            .replaceAll('$1::bigint[]', `${literal(jobs.map((j) => j.id))}::bigint[]`)
            .replaceAll('$2::bigint[]', `${literal(jobs.map((j) => j.runLease))}::bigint[]`)}`,
        );
        await client.query('RESET enable_seqscan');
        const probes = (cte: string) =>
          readsOf(
            planNodes(top.Plan).find((n) => n['Subplan Name'] === `CTE ${cte}`)!,
            'jobs',
          ).reduce(
            (sum, n) =>
              sum +
              Number(n['Actual Loops'] ?? 0) *
                (Number(n['Actual Rows'] ?? 0) + Number(n['Rows Removed by Filter'] ?? 0)),
            0,
          );
        expect({ moved: probes('moved'), stayed: probes('stayed') }).toEqual({ moved: 3, stayed: 0 });
        expect(await Promise.all(jobs.map((j) => whereIs(j.id)))).toEqual(Array(3).fill('history 0 completed'));
      },
    );

    it('a stale lease moves nothing', async () => {
      const job = await seedRunning(f.sql, { runLease: 2 });
      expect(await f.run(workerSql.completeJobs, [[job.id], ['1']])).toEqual([{ id: job.id, run_lease: '1' }]);
      expect(await whereIs(job.id)).toBe('jobs running');
    });

    it('a final failure moves the job into the failed ring; a retryable one stays', async () => {
      const last = await seedRunning(f.sql, { attempt: 3, maxAttempts: 3 });
      const early = await seedRunning(f.sql, { attempt: 1, maxAttempts: 3 });
      const rows = await f.run(workerSql.failJobs, [
        [last.id, early.id],
        [last.runLease, early.runLease],
        ['boom', 'boom'],
        [1_000, 1_000],
        [1_000, 1_000],
      ]);
      expect(rows.map((r) => r.state).sort()).toEqual(['failed', 'retryable']);
      expect(await whereIs(last.id)).toBe('history 8 failed');
      expect(await whereIs(early.id)).toBe('jobs retryable');
    });

    it.each(COMPLETIONS)(
      'a unique job whose final state holds its key stays in awa.jobs; one whose does not moves (%s)',
      async (_, completeJobs) => {
        const held = await seedRunning(f.sql);
        const free = await seedRunning(f.sql);
        await makeUnique(held.id, ['available', 'running', 'completed']);
        await makeUnique(free.id, ['available', 'running']);
        await f.run(completeJobs, [
          [held.id, free.id],
          [held.runLease, free.runLease],
        ]);
        expect(await whereIs(held.id)).toBe('jobs completed');
        expect(await whereIs(free.id)).toBe('history 0 completed');
        // The held key still blocks a new job; the freed one does not.
        const inserted = await f.run(jobsSql.insertUniqueJobs, [
          JSON.stringify([
            {
              ord: 0,
              kind: 'k',
              queue: 'default',
              priority: 0,
              max_attempts: 3,
              unique_key: `key-${held.id}`,
              unique_states: ['available'],
            },
            {
              ord: 1,
              kind: 'k',
              queue: 'default',
              priority: 0,
              max_attempts: 3,
              unique_key: `key-${free.id}`,
              unique_states: ['available'],
            },
          ]),
        ]);
        expect(inserted.map((r) => r.id === null)).toEqual([true, false]);
      },
    );

    it('a rescue that fails a job for good moves it', async () => {
      const job = await seedRunning(f.sql, { attempt: 1, maxAttempts: 1, deadlineInMs: -1_000 });
      const rows = await f.run(maintenanceSql.rescueExpiredDeadlines, [[], [], [], 1_000, 1_000, 10, 'deadline']);
      expect(rows).toMatchObject([{ id: job.id, state: 'failed' }]);
      expect(await whereIs(job.id)).toBe('history 8 failed');
    });

    it('a cancel of a waiting job moves it; getJob still reads it', async () => {
      const id = await seedJob(f.sql);
      expect(await f.run(jobsSql.cancelWaitingJob, [id, 'cancelled by test'])).toEqual([
        { previous_state: 'available', queue: 'default', kind: 'k' },
      ]);
      expect(await whereIs(id)).toBe('history 8 cancelled');
      expect(await f.run(jobsSql.getJob, [id])).toMatchObject([{ id, state: 'cancelled' }]);
      expect(await f.run(jobsSql.requestCancel, [id])).toMatchObject([{ state: 'cancelled', signalled: false }]);
    });
  });

  describe('admin', () => {
    it('retryJob moves a finished job back into awa.jobs with its id; new ids stay above it', async () => {
      const job = await seedRunning(f.sql);
      await f.run(workerSql.completeJobs, [[job.id], [job.runLease]]);
      expect(await f.run(adminSql.retryJob, [job.id])).toEqual([{ state: 'completed', queue: 'default', notified: 1 }]);
      expect(await whereIs(job.id)).toBe('jobs available');
      const [row] = await f.sql('SELECT attempt, finalized_at FROM awa.jobs WHERE id = $1', [job.id]);
      expect(row).toEqual({ attempt: 0, finalized_at: null });
      const [next] = await f.run(jobsSql.insertJobs, [
        insertJobsRows([{ kind: 'k', queue: 'default', priority: 0, max_attempts: 3 }]),
      ]);
      expect(BigInt(next!.id)).toBeGreaterThan(BigInt(job.id));
    });

    it('deleteJob deletes a moved job; cancelBatch moves the waiting jobs it cancels', async () => {
      const job = await seedRunning(f.sql);
      await f.run(workerSql.completeJobs, [[job.id], [job.runLease]]);
      expect(await f.run(adminSql.deleteJob, [job.id])).toEqual([{ state: 'completed', deleted: true }]);
      expect(await whereIs(job.id)).toBe('nowhere');

      const waiting = await seedJob(f.sql);
      const filter = { key: 'all', where: () => 'true' };
      const [batch] = await f.run(adminBatchSql.cancelBatch(filter), ['9223372036854775807', 10, 'bulk cancel']);
      expect(batch).toMatchObject({ cancelled: 1 });
      expect(await whereIs(waiting)).toBe('history 8 cancelled');
    });
  });

  describe('rotation', () => {
    const due = (cls: 'completed' | 'failed', widthMs: number, retentionMs: number) =>
      f.run(historySql.dueRotation, [cls, widthMs, retentionMs]);

    it('is due once the current segment was written for a width, and the next one never used', async () => {
      expect(await due('completed', 60_000, 360_000)).toEqual([]);
      await f.sql(`UPDATE awa.history_rings SET rotated_at = now() - interval '61 seconds'`);
      expect(await due('completed', 60_000, 360_000)).toEqual([{ current: 0, next: 1 }]);
      expect(await due('failed', 60_000, 360_000)).toEqual([{ current: 8, next: 9 }]);
      await f.sql(`UPDATE awa.history_rings SET segment = 15 WHERE class = 'failed'`);
      expect(await due('failed', 60_000, 360_000)).toEqual([{ current: 15, next: 8 }]);
    });

    it('waits for the next segment to be sealed retention + width ago', async () => {
      await f.sql(`UPDATE awa.history_rings SET rotated_at = now() - interval '1 hour'`);
      await f.sql(`UPDATE awa.history_segments SET sealed_at = now() - interval '400 seconds' WHERE segment = 1`);
      expect(await due('completed', 60_000, 360_000)).toEqual([]);
      await f.sql(`UPDATE awa.history_segments SET sealed_at = now() - interval '421 seconds' WHERE segment = 1`);
      expect(await due('completed', 60_000, 360_000)).toEqual([{ current: 0, next: 1 }]);
    });

    it('truncates a segment and moves the ring on, sealing the segment it leaves', async () => {
      const job = await seedRunning(f.sql);
      await f.sql(`UPDATE awa.history_rings SET segment = 1 WHERE class = 'completed'`);
      await f.run(workerSql.completeJobs, [[job.id], [job.runLease]]);
      for (const truncate of historySql.truncateSegment) await f.run(truncate);
      expect(await whereIs(job.id)).toBe('nowhere');
      await f.run(historySql.rotateRing, ['completed', 2, 1]);
      const [ring] = await f.sql(`SELECT segment FROM awa.history_rings WHERE class = 'completed'`);
      const [sealed] = await f.sql(
        'SELECT sealed_at IS NOT NULL AS sealed FROM awa.history_segments WHERE segment = 1',
      );
      expect([ring.segment, sealed.sealed]).toEqual([2, true]);
    });
  });

  it('migration AwaJobHistory moves the finished jobs in at up() (unique-held ones stay) and back at down()', async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: f.url, logging: false }).initialize();
    const runner = dataSource.createQueryRunner();
    const migration = new AwaJobHistory1764800000000();
    try {
      const running = await seedRunning(f.sql);
      await f.run(workerSql.completeJobs, [[running.id], [running.runLease]]);
      await migration.down(runner);
      expect(await f.sql(`SELECT to_regclass('awa.job_history') AS t, to_regclass('awa.all_jobs') AS v`)).toEqual([
        { t: null, v: null },
      ]);
      expect(await f.sql('SELECT state FROM awa.jobs WHERE id = $1', [running.id])).toEqual([{ state: 'completed' }]);
      const failed = await seedJob(f.sql, { state: 'failed', attempt: 1, finalizedAtMs: 0 });
      const held = await seedJob(f.sql, { state: 'cancelled', attempt: 1, finalizedAtMs: 0 });
      await makeUnique(held, ['cancelled']);
      const waiting = await seedJob(f.sql);
      await migration.up(runner);
      expect(await whereIs(running.id)).toBe('history 0 completed');
      expect(await whereIs(failed)).toBe('history 8 failed');
      expect(await whereIs(held)).toBe('jobs cancelled');
      expect(await whereIs(waiting)).toBe('jobs available');
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
  });

  it('runs every statement of its module', () => {
    expect(
      statementsOf(historySql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
