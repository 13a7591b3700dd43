import pg from 'pg';
import { readQueueCounts } from '../../lib/admin/queue-counts.js';
import { AwaModuleEntry, AwaRegistry } from '../../lib/awa.registry.js';
import { AWA_READ_DATABASE, type AwaDatabase } from '../../lib/database/awa-database.js';
import { DashboardService } from '../../lib/dashboard/dashboard.service.js';
import { resolveDashboardOptions } from '../../lib/dashboard/dashboard.options.js';
import type { SqlStatement } from '../../lib/sql/sql-statement.js';
import { createBenchApp } from '../support/bench.app.js';
import { now } from '../support/bench.progress.js';
import { r2 } from '../support/bench.report.js';
import type { Scenario } from './scenario.js';
import { JOB_TABLE_COLUMNS } from '../../lib/sql/job-row.sql.js';

const QUEUES = ['default', 'emails', 'reports'];
/** Timed calls of each page (after one untimed warm-up): the figure is their median. */
const CALLS = 7;

/**
 * `rows` finished jobs (in awa.job_history, where finished jobs live) over three queues (2% failed, 0.5% cancelled, the rest completed), finalized
 * over the last 24 h as the default retention keeps them, plus a backlog of 1,000 available and
 * 100 scheduled jobs; one INSERT ... SELECT generate_series, then VACUUM ANALYZE (what autovacuum
 * does after such a load).
 */
async function seed(client: pg.Client, rows: number): Promise<void> {
  // Through a temporary copy of awa.jobs with its defaults (a partition of awa.job_history has none).
  await client.query(`CREATE TEMP TABLE seed_jobs (LIKE awa.jobs INCLUDING DEFAULTS)`);
  await client.query(
    `
    INSERT INTO seed_jobs (id, kind, queue, args, state, attempt, max_attempts, run_at, created_at, attempted_at,
      finalized_at, run_lease)
    SELECT nextval(pg_get_serial_sequence('awa.jobs', 'id')), 'bench.page', (ARRAY['default', 'emails', 'reports'])[1 + g % 3],
           jsonb_build_object('i', g, 'user', g % 5000),
           CASE WHEN g % 50 = 0 THEN 'failed' WHEN g % 200 = 1 THEN 'cancelled' ELSE 'completed' END,
           1, 25, t, t, t, t + interval '2 ms', 1
      FROM generate_series(1, $1::int) AS g,
           LATERAL (SELECT now() - interval '24 hours' + g * (interval '24 hours' / $1::int)) AS s(t)`,
    [rows],
  );
  await client.query(
    `INSERT INTO awa.job_history (${JOB_TABLE_COLUMNS.join(', ')}, segment) SELECT s.*, r.segment FROM seed_jobs s JOIN awa.history_rings r
        ON r.class = CASE WHEN s.state = 'completed' THEN 'completed' ELSE 'failed' END`,
  );
  await client.query('DROP TABLE seed_jobs');
  await client.query(
    `INSERT INTO awa.jobs (kind, queue, args, state, run_at)
     SELECT 'bench.page', (ARRAY['default', 'emails', 'reports'])[1 + g % 3], jsonb_build_object('i', g),
            CASE WHEN g <= 1000 THEN 'available' ELSE 'scheduled' END,
            CASE WHEN g <= 1000 THEN now() ELSE now() + interval '1 hour' END
       FROM generate_series(1, 1100) AS g`,
  );
  await client.query('VACUUM ANALYZE awa.jobs, awa.job_history');
}

/**
 * What each dashboard page and QueueAdmin.queueStates read on a refresh, timed over a table of
 * BENCH_DASHBOARD_ROWS (default 10,000,000) finished jobs: the overview (queue counts and the
 * throughput chart, which the page reads side by side), a queue's job list, the job list, a search
 * that matches nothing (a page and the count before a bulk action), and queueStates. The statements
 * run as prepared statements on a pg pool, as AwaDatabase runs them. The figure is the median of
 * CALLS refreshes; the first call (cold plans, and the chart's whole hour) is in `config.first_ms`.
 */
export const dashboardScenario: Scenario = {
  id: 'dashboard',
  title: 'dashboard reads over many finished jobs',
  timeoutMs: 3_600_000,
  run: async (ctx) => {
    const rows = Number(process.env.BENCH_DASHBOARD_ROWS ?? 10_000_000);
    const db = await ctx.database();
    const { app } = await createBenchApp(db.url, { queues: {} }, false); // the migrations create the schema
    await app.close();
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    ctx.defer(() => pool.end());
    const client = await pool.connect();
    ctx.log(`  seeding ${rows.toLocaleString('en-US')} finished jobs`);
    const t0 = now();
    try {
      await seed(client, rows);
    } finally {
      client.release();
    }
    ctx.log(`  seeded in ${Math.round(now() - t0)} ms`);

    const database = {
      query: async (statement: SqlStatement, values: unknown[] = []) =>
        (await pool.query({ name: statement.name, text: statement.text, values })).rows,
    } as unknown as AwaDatabase;
    const awaOptions = { name: undefined, queues: new Map(QUEUES.map((q) => [q, {}])) };
    // The app's one AwaModule, as the registry holds it: the dashboard reads through it.
    const registry = new AwaRegistry();
    registry.register(new AwaModuleEntry(awaOptions as never, {} as never).add(AWA_READ_DATABASE, database));
    const dashboard = new DashboardService(
      null as never,
      null as never,
      awaOptions as never,
      resolveDashboardOptions(),
      registry,
    );
    const nothing = { search: 'no job has this text' };
    const pages: Array<[string, () => Promise<unknown>]> = [
      ['overview, queue counts', () => readQueueCounts(database, QUEUES)],
      ['overview, throughput chart', () => dashboard.throughput()],
      ['overview (the page: both at once)', () => Promise.all([dashboard.queues(), dashboard.throughput()])],
      ['queue list (jobs of one queue, first page)', () => dashboard.jobs({ queues: ['emails'] }, page)],
      ['jobs list (first page)', () => dashboard.jobs({}, page)],
      ['jobs list of failed jobs (first page)', () => dashboard.jobs({ states: ['failed'] }, page)],
      ['search matching nothing (a page)', () => dashboard.jobs(nothing, page)],
      ['search matching nothing (count)', () => dashboard.count(nothing)],
      ['QueueAdmin.queueStates', () => readQueueCounts(database, QUEUES)],
    ];
    for (const [name, read] of pages) {
      // The first call (untimed in the median): plans the prepared statements, loads the pages a
      // refresh finds cached, and fills the throughput chart's settled minutes.
      const t1 = now();
      await read();
      const first = now() - t1;
      const times: number[] = [];
      for (let i = 0; i < CALLS && !ctx.abandoned; i++) {
        const t = now();
        await read();
        times.push(now() - t);
      }
      times.sort((a, b) => a - b);
      const median = times[Math.floor(times.length / 2)]!;
      ctx.figure({
        metric: 'dashboard_page_ms',
        value: r2(median),
        n: times.length,
        unit: 'ms (median)',
        config: {
          label: `${name}, ${rows.toLocaleString('en-US')} finished rows`,
          rows,
          first_ms: r2(first),
          max_ms: r2(times.at(-1)!),
        },
      });
      ctx.log(`  ${name}: median ${r2(median)} ms, max ${r2(times.at(-1)!)} ms, first call ${r2(first)} ms`);
    }
  },
};
const page = { after: null, limit: 50 };
