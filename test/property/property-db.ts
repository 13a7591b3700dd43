import pg from 'pg';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import type { SqlStatement } from '../../lib/sql/index.js';
import type { SqlValues } from '../../lib/sql/sql-statement.js';
import { applyMigrations } from '../sql/sql-fixture.js';
import { createTestDatabase, endPool } from '../support/test-database.js';

/** A job row as the invariants read it. */
export interface JobRow {
  id: string;
  state: string;
  attempt: number;
  max_attempts: number;
  run_lease: number;
  errors: number;
  last_error: string | null;
  /** run_at has come (a retryable job is claimable). */
  due: boolean;
}

/** A lease row, with whether the rescues would take it now. */
export interface LeaseRow {
  job_id: string;
  run_lease: number;
  instance_id: string;
  /** Older than STALE_AFTER_MS. */
  stale: boolean;
  expired: boolean;
}

export interface Snapshot {
  jobs: Map<string, JobRow>;
  leases: LeaseRow[];
}

/** heartbeatStaleAfter of the simulated leader; a stalled instance's heartbeats are set back an hour. */
export const STALE_AFTER_MS = 60_000;

/** One database for the whole property (truncated between runs), with a small pool. */
export interface PropertyDb {
  pool: pg.Pool;
  /** Runs a named statement as a prepared statement, as AwaDatabase does. */
  run<P extends unknown[], R>(statement: SqlStatement<P, R>, ...values: SqlValues<NoInfer<P>>): Promise<R[]>;
  sql<R = any>(text: string, values?: unknown[]): Promise<R[]>;
  snapshot(): Promise<Snapshot>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

export async function createPropertyDb(): Promise<PropertyDb> {
  const db = await createTestDatabase();
  await applyMigrations(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 3 });
  const sql = async (text: string, values: unknown[] = []) => (await pool.query(text, values)).rows;
  return {
    pool,
    sql,
    // The types are checked at the call sites (PropertyDb). Sent and read as AwaDatabase does (the claim's row factory).
    run: (async (statement: SqlStatement, values: unknown[] = []) =>
      AwaDatabase.queryOn(pool as unknown as pg.Client, statement, values)) as PropertyDb['run'],
    async snapshot() {
      const jobs =
        await sql(`SELECT id::text, state, attempt, max_attempts, run_lease::float8 AS run_lease, jsonb_array_length(errors) AS errors,
                                     errors -> -1 ->> 'error' AS last_error, run_at <= now() AS due
                                FROM awa.all_jobs ORDER BY id`);
      const leases = await sql(
        `SELECT job_id::text, run_lease::float8 AS run_lease, instance_id,
                                       heartbeat_at < now() - $1::float8 * interval '1 millisecond' AS stale,
                                       coalesce(deadline_at < now(), false) AS expired
                                  FROM awa.active_leases ORDER BY job_id, run_lease`,
        [STALE_AFTER_MS],
      );
      return { jobs: new Map(jobs.map((j: JobRow) => [j.id, j])), leases };
    },
    async reset() {
      await sql(
        'TRUNCATE awa.jobs, awa.job_history, awa.active_leases, awa.instances, awa.worker_offers RESTART IDENTITY',
      );
    },
    async close() {
      await endPool(pool);
      await db.drop();
    },
  };
}
