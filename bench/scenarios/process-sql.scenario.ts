import pg from 'pg';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { claimJobs, fromIndexStart } from '../../lib/sql/claim.sql.js';
import { completeJobsOutsideWorkflows } from '../../lib/sql/worker.sql.js';
import { createBenchApp } from '../support/bench.app.js';
import { BenchKinds } from '../support/bench.handlers.js';
import { MachineCpuMeter } from '../support/bench.machine-cpu.js';
import { now } from '../support/bench.progress.js';
import { r2 } from '../support/bench.report.js';
import type { Scenario } from './scenario.js';

/** The floor's loop (../shared/peers-bench/bench-floor.mjs): batches of 500, on 1 and on 2 connections. */
const BATCH = 500;
const CONNECTIONS = [1, 2] as const;
const TIMEOUT_MS = 900_000;

/**
 * Our claim and completion statements in the SQL floor's loop, with no framework around them:
 * BENCH_LONG_N jobs inserted by one statement, then each connection claims BATCH (claimJobs) and
 * completes them (completeJobsOutsideWorkflows, the worker's for jobs in no workflow) until none is
 * left, both committing synchronously like the floor's.
 * Beside `process-long` (the whole instance) and the floor (the least SQL a lease queue must run), it
 * tells the two shares of the gap apart: what our statements cost the database over the floor's, and
 * what the instance adds to them. The instance's claim commits asynchronously (ClaimConnection); this
 * loop does not, as the floor does not.
 */
export const processSqlScenario: Scenario = {
  id: 'process-sql',
  title: 'process-sql: our claim and completion statements in the SQL floor loop, BENCH_LONG_N jobs',
  timeoutMs: TIMEOUT_MS,
  run: async (ctx) => {
    const n = ctx.config.longN;
    for (const connections of CONNECTIONS) {
      if (ctx.abandoned) return;
      const db = await ctx.database();
      // A producer-only instance: migrates the schema and registers the instance the leases name.
      const { app } = await createBenchApp(db.url, {}, false);
      const admin = new pg.Client({ connectionString: db.url });
      await admin.connect();
      try {
        const instance = (await admin.query<{ id: string }>('SELECT id FROM awa.instances LIMIT 1')).rows[0]!.id;
        await admin.query(
          `INSERT INTO awa.jobs (kind, queue, args) SELECT $1, 'default', '{}'::jsonb FROM generate_series(1, $2)`,
          [BenchKinds.noop, n],
        );
        await admin.query('VACUUM ANALYZE awa.jobs');
        let done = 0;
        const machine = new MachineCpuMeter();
        const t0 = now();
        await Promise.all(
          Array.from({ length: connections }, async () => {
            const client = new pg.Client({ connectionString: db.url });
            await client.connect();
            try {
              for (;;) {
                // Read as the worker reads it (the claim's row factory, claimedRowOf).
                const claimed = await AwaDatabase.queryOn(client, claimJobs, [
                  'default',
                  [BenchKinds.noop],
                  BATCH,
                  instance,
                  0,
                  ...fromIndexStart([BenchKinds.noop]),
                ]);
                if (claimed.length === 0) break;
                // The completion returns the attempts it missed (normally none).
                const missed = await client.query({
                  ...completeJobsOutsideWorkflows,
                  values: [claimed.map((r) => r.id), claimed.map((r) => r.run_lease)],
                });
                done += claimed.length - (missed.rowCount ?? 0);
              }
            } finally {
              await client.end();
            }
          }),
        );
        const ms = now() - t0;
        const machineUs = machine.read()?.busyUs;
        const value = Math.round(done / (ms / 1000));
        const machineCpuPerJob = machineUs === undefined ? undefined : r2(machineUs / done);
        ctx.figure({
          metric: 'process_sql_jobs_per_s',
          value,
          n,
          unit: 'jobs/s',
          config: {
            label: `claimJobs + completeJobsOutsideWorkflows in the floor loop, batch ${BATCH}, ${connections} connection(s)`,
            connections,
            batch: BATCH,
            done,
            ms: r2(ms),
            ok: done === n,
            machine_cpu_us_per_job: machineCpuPerJob,
          },
        });
        if (machineCpuPerJob !== undefined)
          ctx.figure({
            metric: 'process_sql_machine_cpu_us_per_job',
            value: machineCpuPerJob,
            n,
            unit: 'µs/job',
            config: { label: `the machine's CPU per job of the loop above, ${connections} connection(s)`, connections },
          });
        ctx.log(
          `  ${connections} connection(s): ${value} jobs/s (${done} of ${n})` +
            (machineCpuPerJob === undefined ? '' : `, ${machineCpuPerJob} µs of the machine's CPU per job`),
        );
      } finally {
        await admin.end();
        await app.close();
        await db.drop();
      }
    }
  },
};
