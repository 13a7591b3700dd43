import { createBenchApp } from '../support/bench.app.js';
import { profileId, type QueueProfile } from '../support/bench.config.js';
import { DbObserver } from '../support/bench.observer.js';
import { now } from '../support/bench.progress.js';
import type { DrainRun } from '../support/bench.repeat.js';
import { r2 } from '../support/bench.report.js';
import { drainInProcess, processLabel, processQueueOptions, recordDrains } from './process.scenario.js';
import type { Scenario } from './scenario.js';
import { JOB_TABLE_COLUMNS } from '../../lib/sql/job-row.sql.js';

/**
 * `rows` completed jobs in awa.job_history, where finished jobs live, finalized within the last hour (so the default 24 h retention keeps them
 * all through the run), written with one INSERT ... SELECT generate_series, then VACUUM ANALYZE
 * and a CHECKPOINT so the seed's own writes do not land inside the timed drains.
 */
async function seedFinishedJobs(observer: DbObserver, rows: number): Promise<Record<string, unknown>> {
  const t0 = now();
  // Through a temporary copy of awa.jobs with its defaults (a partition of awa.job_history has none).
  await observer.query(`CREATE TEMP TABLE seed_jobs (LIKE awa.jobs INCLUDING DEFAULTS)`);
  await observer.query(
    `
    INSERT INTO seed_jobs (id, kind, queue, args, state, attempt, max_attempts, run_at, created_at, attempted_at,
      finalized_at, run_lease)
    SELECT nextval(pg_get_serial_sequence('awa.jobs', 'id')), 'bench.noop', 'default', jsonb_build_object('i', g),
           'completed', 1, 25, t, t, t, t + interval '2 ms', 1
      FROM generate_series(1, $1::int) AS g,
           LATERAL (SELECT now() - interval '1 hour' + (g % 3000000) * interval '1 ms') AS s(t)`,
    [rows],
  );
  await observer.query(
    `INSERT INTO awa.job_history (${JOB_TABLE_COLUMNS.join(', ')}, segment) SELECT s.*, r.segment FROM seed_jobs s, awa.history_rings r WHERE r.class = 'completed'`,
  );
  await observer.query('DROP TABLE seed_jobs');
  const insertMs = now() - t0;
  await observer.query('VACUUM ANALYZE awa.jobs, awa.job_history');
  await observer.query('CHECKPOINT').catch(() => undefined); // needs superuser; the figure stands without it
  const [size] = await observer.query<{ jobs: string }>(
    `SELECT pg_size_pretty(sum(pg_total_relation_size(relid))) AS jobs FROM pg_partition_tree('awa.job_history')`,
  );
  return { big_rows: rows, seed_insert_ms: r2(insertMs), seed_total_ms: r2(now() - t0), jobs_table_size: size!.jobs };
}

/**
 * The headline process run again, with `rows` finished jobs kept in the tables, and its ratio to
 * the empty-table run of the same configuration (when that ran in this bench). The rows are
 * seeded once; the repeats drain on the same database (each adds N completed jobs to the rows).
 */
export function bigTableScenario(profile: QueueProfile): Scenario {
  return {
    id: `big-table-${profileId(profile)}`,
    title: `process with finished rows kept: ${processLabel(profile)}`,
    run: async (ctx) => {
      const rows = ctx.config.bigRows;
      const label = `${processLabel(profile)}, ${rows.toLocaleString('en-US')} finished rows`;
      const db = await ctx.database();
      // Boot once without a worker, so the migrations create the schema the seed writes into.
      const { app } = await createBenchApp(db.url, processQueueOptions(profile), false);
      await app.close();
      const observer = new DbObserver(db.url);
      await observer.connect();
      ctx.defer(() => observer.end());
      ctx.log(`  seeding ${rows} completed jobs`);
      const seeded = await seedFinishedJobs(observer, rows);
      ctx.log(`  seeded in ${Math.round(seeded.seed_total_ms as number)} ms (${String(seeded.jobs_table_size)})`);

      const runs: DrainRun[] = [];
      for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) runs.push(await drainInProcess(ctx, db, profile));
      const value = recordDrains(ctx, label, runs, seeded);

      const empty = ctx.figures.find(
        (f) => f.metric === 'process_jobs_per_s' && f.config.label === processLabel(profile) && f.config.ok,
      );
      if (value === undefined || !empty) {
        ctx.log('  no ratio: the empty-table run of this configuration did not run or did not finish');
        return;
      }
      ctx.figure({
        metric: 'process_big_table_ratio',
        value: r2(value / empty.value),
        n: ctx.config.n,
        unit: '× empty',
        config: {
          label,
          concurrency: profile.concurrency,
          prefetch: profile.prefetch,
          big_rows: rows,
          empty_jobs_per_s: empty.value,
          big_jobs_per_s: value,
          repeat: runs.length,
        },
      });
      ctx.log(`  ratio to the empty-table run: ${r2(value / empty.value)}`);
    },
  };
}
