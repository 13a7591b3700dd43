import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startEmbeddedServer, type EmbeddedServer } from '../support/embedded-server.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The PostgreSQL a chaos run owns, and the one fault it injects into it. */
export interface ChaosServer {
  /** The chaos database. */
  readonly url: string;
  /** How the restart is done, for the summary. */
  readonly description: string;
  /** Takes the database away for at least `downMs` and brings it back. */
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

const DATABASE = 'chaos';

/**
 * A private embedded PostgreSQL (tuned for the run) holding one database `database`, and its URL.
 * fsync=off survives the crash of PostgreSQL (its writes are in the kernel), not that of the machine,
 * which no run does. synchronous_commit=off does not survive a crash: a commit acknowledged but not
 * yet written by the WAL writer is lost with the shared memory, so `crashable` keeps it on.
 */
async function embeddedWithDatabase(
  dirPrefix: string,
  database: string,
  crashable = false,
): Promise<{ server: EmbeddedServer; url: string }> {
  const server = await startEmbeddedServer({
    dirPrefix,
    persistent: true,
    flags: [
      ...['-c', 'max_connections=300', '-c', 'fsync=off'],
      ...(crashable ? [] : ['-c', 'synchronous_commit=off']),
    ],
  });
  try {
    const admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`).finally(() => admin.end());
  } catch (error) {
    await server.remove();
    throw error;
  }
  return { server, url: `postgres://postgres:postgres@127.0.0.1:${server.port}/${database}` };
}

/**
 * A private embedded PostgreSQL, so that restarting it disturbs nothing else. The restart is a real
 * one: a fast shutdown (every session is terminated), a pause, and a start on the same data.
 */
async function startEmbedded(): Promise<ChaosServer> {
  const { server, url } = await embeddedWithDatabase('awa-chaos-pg-', DATABASE);
  return {
    url,
    description: `private embedded PostgreSQL on port ${server.port}; restart = fast shutdown, pause, start`,
    async restart(downMs) {
      await server.stopServer();
      await sleep(downMs);
      await server.startServer();
    },
    stop: server.remove,
  };
}

/** The second server of --second-server: always a private embedded one, which the run crashes once. */
export interface SecondChaosServer {
  readonly url: string;
  readonly description: string;
  /** An immediate shutdown (SIGQUIT to the postmaster, like a crash): every session dies at once. */
  crash(): Promise<void>;
  /** Starts it again on the same data (crash recovery first). */
  start(): Promise<void>;
  stop(): Promise<void>;
}

export async function startSecondServer(): Promise<SecondChaosServer> {
  const { server, url } = await embeddedWithDatabase('awa-chaos-pg2-', 'billing', true);
  return {
    url,
    description: `second private embedded PostgreSQL on port ${server.port}; crash = immediate shutdown (SIGQUIT), pause, start`,
    crash: server.crashServer,
    start: server.startServer,
    stop: server.remove,
  };
}

/**
 * Fallback on a shared server (DATABASE_URL): a database of its own, and instead of a restart,
 * connections to it are refused for `downMs` and every backend of it is terminated.
 */
async function startShared(adminUrl: string): Promise<ChaosServer> {
  const name = `awa_chaos_${randomBytes(5).toString('hex')}`;
  const withAdmin = async <T>(body: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      return await body(client);
    } finally {
      await client.end();
    }
  };
  await withAdmin((c) => c.query(`CREATE DATABASE "${name}"`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    description:
      `database ${name} on the shared server ${url.host} (embedded PostgreSQL unavailable); ` +
      'restart = refuse connections and pg_terminate_backend every session of the chaos database',
    async restart(downMs) {
      await withAdmin(async (c) => {
        await c.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS false`);
        await c.query(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
          [name],
        );
        await sleep(downMs);
        await c.query(`ALTER DATABASE "${name}" ALLOW_CONNECTIONS true`);
      });
    },
    async stop() {
      await withAdmin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).catch(() => undefined);
    },
  };
}

/**
 * Always a private embedded server; the shared-server fallback only when that cannot start
 * (CHAOS_SHARED_SERVER=1 forces the fallback, to test it).
 */
export async function startChaosServer(log: (line: string) => void): Promise<ChaosServer> {
  try {
    if (process.env.CHAOS_SHARED_SERVER === '1') throw new Error('CHAOS_SHARED_SERVER=1');
    return await startEmbedded();
  } catch (error) {
    const adminUrl = process.env.DATABASE_URL ?? process.env.AWA_TEST_ADMIN_URL;
    if (!adminUrl) throw error;
    log(`embedded PostgreSQL could not start (${String(error)}); falling back to ${new URL(adminUrl).host}`);
    return startShared(adminUrl);
  }
}
