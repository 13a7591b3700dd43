import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startEmbeddedServer } from '../../test/support/embedded-server.js';

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

export async function startBenchServer(log: (line: string) => void): Promise<BenchServer> {
  const url = process.env.DATABASE_URL;
  if (url) {
    return { adminUrl: url, label: `DATABASE_URL (${new URL(url).host})`, stop: async () => undefined };
  }
  // Durable settings (fsync on), unlike the test server: a bench with fsync off would flatter every commit.
  const server = await startEmbeddedServer({ dirPrefix: 'awa-bench-pg-', flags: ['-c', 'max_connections=200'] });
  log(`started embedded PostgreSQL on port ${server.port} (${server.dataDir})`);
  return { adminUrl: server.adminUrl, label: `embedded (port ${server.port})`, stop: server.remove };
}

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs one statement on the admin database. */
export async function adminQuery<R extends pg.QueryResultRow = any>(
  adminUrl: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
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
  const rows = await adminQuery<{ name: string; setting: string; unit: string | null }>(
    adminUrl,
    `SELECT name, setting, unit FROM pg_settings WHERE name = ANY($1)`,
    [['server_version', 'shared_buffers', 'synchronous_commit', 'fsync', 'max_connections', 'work_mem']],
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.unit ? `${r.setting} (${r.unit})` : r.setting]));
}
