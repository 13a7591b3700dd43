// Shared by the test harness (test/setup/global-setup.mjs loads its build), the chaos runner, the
// bench and the sample: a free port, and an embedded PostgreSQL on it with a temporary data
// directory. Works as root in a checkout other users cannot enter (see embedded-postgres-loader).
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadEmbeddedPostgres } from './embedded-postgres-loader.js';

/** Whether process `pid` still exists (signal 0 tests without signalling). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port')),
      );
    });
  });
}

export interface EmbeddedServer {
  port: number;
  /** The `postgres` database of the server, as superuser `postgres`. */
  adminUrl: string;
  dataDir: string;
  /** Starts it again after stopServer() (a real restart, same data). */
  startServer(): Promise<void>;
  stopServer(): Promise<void>;
  /**
   * Stops it like a crash: an immediate shutdown (SIGQUIT to the postmaster: every backend is killed at
   * once, no checkpoint), so that startServer() runs crash recovery.
   */
  crashServer(): Promise<void>;
  /** Stops it (if running) and removes its data directory. */
  remove(): Promise<void>;
}

/** An embedded PostgreSQL (the `embedded-postgres` package) on a free port, started. */
export async function startEmbeddedServer(options: {
  dirPrefix: string;
  flags: string[];
  persistent?: boolean;
  onError?: (error: unknown) => void;
}): Promise<EmbeddedServer> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const port = await freePort();
  // The data directory sits in a 0755 parent of its own: as root, PostgreSQL runs as `postgres`,
  // which must reach it (mkdtemp makes 0700 directories), and embedded-postgres chowns it to them.
  const parent = await mkdtemp(join(tmpdir(), options.dirPrefix));
  await chmod(parent, 0o755);
  const dataDir = join(parent, 'data');
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: options.persistent ?? false,
    createPostgresUser: true,
    postgresFlags: options.flags,
    onLog: () => undefined,
    onError: options.onError ?? (() => undefined),
  });
  // After a crash the package still holds the dead process, and its stop() would wait for an exit
  // that already happened: skip it until the next start.
  let crashed = false;
  const stopServer = async () => {
    if (!crashed) await server.stop();
  };
  const remove = async () => {
    await stopServer().catch(() => undefined);
    await rm(parent, { recursive: true, force: true });
  };
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await remove();
    throw error;
  }
  return {
    port,
    adminUrl: `postgres://postgres:postgres@127.0.0.1:${port}/postgres`,
    dataDir,
    startServer: async () => {
      await server.start();
      crashed = false;
    },
    stopServer,
    async crashServer() {
      const pid = Number((await readFile(join(dataDir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
      crashed = true;
      process.kill(pid, 'SIGQUIT');
      for (const until = Date.now() + 30_000; alive(pid); await sleep(20))
        if (Date.now() > until) throw new Error(`PostgreSQL ${pid} did not exit within 30 s of SIGQUIT`);
    },
    remove,
  };
}
