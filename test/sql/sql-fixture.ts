import { randomBytes } from 'node:crypto';
import { AwaMigrations } from 'nestjs-awa';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { claimSql, type SqlStatement } from '../../lib/sql/index.js';
import type { SqlValues } from '../../lib/sql/sql-statement.js';
import type { Exec } from '../support/job-factory.js';
import { createTestDatabase, endPool } from '../support/test-database.js';

/** A statement's values (optional if it has none), then the client to run it on. */
export type RunArgs<P extends unknown[]> = [...SqlValues<P>, on?: pg.ClientBase];

/**
 * A fresh database with the awa migrations applied, a small pg Pool on it, and dedicated
 * clients for tests that need sessions of their own (LISTEN, locks, open transactions).
 */
export interface SqlFixture {
  readonly url: string;
  readonly pool: pg.Pool;
  /** Plain SQL on the pool, for seeding and reading rows. */
  readonly sql: Exec;
  /** Names of the statements run through run(), so a file can check it ran all of its module's. */
  readonly executed: Set<string>;
  /** Runs a named statement as a prepared statement, as AwaDatabase does (on `on`, or the pool). */
  run<P extends unknown[], R>(statement: SqlStatement<P, R>, ...args: RunArgs<NoInfer<P>>): Promise<R[]>;
  /** Runs a named statement and returns how many rows it touched. */
  execute<P extends unknown[]>(statement: SqlStatement<P, unknown>, ...values: SqlValues<NoInfer<P>>): Promise<number>;
  /** A dedicated connection, ended by close(). */
  client(): Promise<pg.Client>;
  /** Empties every awa table. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** Exec on one client, e.g. to read rows inside its open transaction (where now() stands still). */
export const execOn =
  (client: pg.ClientBase): Exec =>
  async (text, values) =>
    (await client.query(text, values)).rows;

export async function createSqlFixture(): Promise<SqlFixture> {
  const db = await createTestDatabase();
  await applyMigrations(db.url);
  const pool = new pg.Pool({ connectionString: db.url, max: 4 });
  const clients: pg.Client[] = [];
  const executed = new Set<string>();
  return {
    url: db.url,
    pool,
    executed,
    sql: async (text, values) => (await pool.query(text, values)).rows,
    // The types are checked at the call sites (SqlFixture). As AwaDatabase sends it (its row
    // factory, its key arrays), on a client or the pool, which answers query() alike.
    run: (async (statement: SqlStatement, values: unknown[] = [], on?: pg.ClientBase) => {
      executed.add(statement.name);
      return AwaDatabase.queryOn((on ?? pool) as pg.Client, statement, values);
    }) as SqlFixture['run'],
    execute: (async (statement: SqlStatement, values: unknown[] = []) => {
      executed.add(statement.name);
      const result = await pool.query({ name: statement.name, text: statement.text, values });
      return result.rowCount ?? 0;
    }) as SqlFixture['execute'],
    async client() {
      const client = new pg.Client({ connectionString: db.url });
      client.on('error', () => undefined); // a test may terminate it on purpose
      await client.connect();
      clients.push(client);
      return client;
    },
    async reset() {
      await pool.query(
        'TRUNCATE awa.jobs, awa.job_history, awa.active_leases, awa.instances, awa.worker_offers, awa.job_dependencies RESTART IDENTITY',
      );
    },
    async close() {
      await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
      await endPool(pool);
      await db.drop();
    },
  };
}

/**
 * The SQL fixture of the enclosing describe block: created before all its tests, closed after them,
 * and (unless `reset` is false) emptied before each. The returned fixture forwards to it, so its
 * members can be used from the block's hooks and tests.
 */
export function useSqlFixture({ reset = true }: { reset?: boolean } = {}): SqlFixture {
  let fixture: SqlFixture | undefined;
  const current = (): SqlFixture => {
    if (!fixture) throw new Error('the SQL fixture is created in beforeAll');
    return fixture;
  };
  beforeAll(async () => {
    fixture = await createSqlFixture();
  });
  afterAll(async () => {
    await fixture?.close();
  });
  if (reset) {
    beforeEach(async () => {
      await current().reset();
    });
  }
  return {
    get url() {
      return current().url;
    },
    get pool() {
      return current().pool;
    },
    get executed() {
      return current().executed;
    },
    sql: (text, values) => current().sql(text, values),
    run: (statement, ...args) => current().run(statement, ...args),
    execute: (statement, ...values) => current().execute(statement, ...values),
    client: () => current().client(),
    reset: () => current().reset(),
    close: () => current().close(),
  };
}

/** Applies the bundled migrations through TypeORM, as a host app's migration run would. */
export async function applyMigrations(url: string): Promise<void> {
  const dataSource = new DataSource({ type: 'postgres', url, logging: false });
  await dataSource.initialize();
  const queryRunner = dataSource.createQueryRunner();
  try {
    for (const Migration of AwaMigrations) await new Migration().up(queryRunner);
  } finally {
    await queryRunner.release();
    await dataSource.destroy();
  }
}

/** Every named statement a SQL module exports. */
export function statementsOf(module: Record<string, unknown>): SqlStatement[] {
  return Object.values(module).filter(
    (v): v is SqlStatement => typeof v === 'object' && v !== null && 'name' in v && 'text' in v,
  );
}

export interface JobRow {
  id: string;
  kind: string;
  queue: string;
  state: string;
  priority: number;
  attempt: number;
  max_attempts: number;
  run_lease: string;
  errors: Array<{ at: string; attempt: number; error: string }>;
  finalized_at: Date | null;
  attempted_at: Date | null;
  /** run_at - now(), in ms. */
  run_at_in_ms: number;
  /** run_at - the `at` of the last error entry, in ms (null without errors). */
  retry_delay_ms: number | null;
}

/** A job row, with its run_at expressed relative to now() and to its last error. */
export async function readJob(exec: Exec, id: string): Promise<JobRow | undefined> {
  const [row] = await exec(
    `SELECT id::text, kind, queue, state, priority, attempt, max_attempts, run_lease::text, errors, finalized_at,
      attempted_at,
            extract(epoch FROM run_at - now())::float8 * 1000 AS run_at_in_ms,
            CASE WHEN jsonb_array_length(errors) > 0
                 THEN extract(epoch FROM run_at - (errors -> -1 ->> 'at')::timestamptz)::float8 * 1000 END AS
                   retry_delay_ms
       FROM awa.all_jobs WHERE id = $1::bigint`,
    [id],
  );
  return row;
}

/** Lease rows of a job, as "run_lease@instance". */
export async function leasesOf(exec: Exec, id: string): Promise<string[]> {
  const rows = await exec(
    `SELECT run_lease::text || '@' || instance_id AS lease FROM ` +
      `awa.active_leases WHERE job_id = $1::bigint ORDER BY run_lease`,
    [id],
  );
  return rows.map((r) => r.lease as string);
}

/** Collects NOTIFY payloads of `channel` on a dedicated client. */
export async function listen(client: pg.Client, channel: string): Promise<{ take: (exec: Exec) => Promise<string[]> }> {
  let payloads: string[] = [];
  let waiter: (() => void) | undefined;
  let markers = 0;
  client.on('notification', (msg) => {
    if (msg.channel !== channel) return;
    payloads.push(msg.payload ?? '');
    waiter?.();
  });
  await client.query(`LISTEN "${channel}"`);
  return {
    /**
     * The payloads received since the last take(). It sends a marker NOTIFY and waits for it:
     * notifications arrive in commit order, so every earlier one has arrived by then.
     */
    take: async (exec) => {
      const marker = `__marker_${++markers}`;
      const seen = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no marker notification within 15 s; got ${JSON.stringify(payloads)}`)),
          15_000,
        );
        waiter = () => {
          if (!payloads.includes(marker)) return;
          clearTimeout(timer);
          resolve();
        };
        waiter();
      });
      await exec('SELECT pg_notify($1, $2)', [channel, marker]);
      await seen;
      const taken = payloads.slice(0, payloads.indexOf(marker));
      payloads = payloads.slice(payloads.indexOf(marker) + 1);
      return taken;
    },
  };
}

/**
 * Runs `body` on a dedicated client of `f` set to a new role that may use the awa schema but owns
 * none of its tables; the role is dropped after.
 */
export async function asRoleOwningNothing(f: SqlFixture, body: (client: pg.Client) => Promise<void>): Promise<void> {
  const role = `awa_reader_${randomBytes(4).toString('hex')}`;
  await f.sql(`CREATE ROLE ${role}`);
  const client = await f.client();
  try {
    await f.sql(`GRANT USAGE ON SCHEMA awa TO ${role}`);
    await client.query(`SET ROLE ${role}`);
    await body(client);
  } finally {
    await client.query('RESET ROLE');
    await f.sql(`DROP OWNED BY ${role}`);
    await f.sql(`DROP ROLE ${role}`);
  }
}

/**
 * claimJobs on `f` for `queue` and `kinds`, reading each kind's whole claim index (as a worker's
 * first claim does): up to `limit` jobs for `instance`, with a deadline of `deadlineMs` (0: none).
 */
export const claimer =
  (f: SqlFixture) =>
  (queue: string, kinds: string[], limit: number, instance = 'instance-a', deadlineMs = 0, on?: pg.ClientBase) =>
    f.run(claimSql.claimJobs, [queue, kinds, limit, instance, deadlineMs, ...claimSql.fromIndexStart(kinds)], on);

/** The ids of `rows`, sorted. */
export const sortedIds = (rows: Array<{ id: string }>): string[] => rows.map((r) => r.id).sort();

/** How many lease rows there are. */
export const leaseCount = async (f: SqlFixture): Promise<number> =>
  Number((await f.sql('SELECT count(*) AS n FROM awa.active_leases'))[0].n);
