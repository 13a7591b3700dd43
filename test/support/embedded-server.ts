// Shared by the test harness (test/setup/global-setup.mjs loads its build), the chaos runner, the
// bench and the sample: a free port, and an embedded PostgreSQL on it with a temporary data
// directory. Works as root in a checkout other users cannot enter (see embedded-postgres-loader).
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEmbeddedPostgres } from './embedded-postgres-loader.js';

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
  const remove = async () => {
    await server.stop().catch(() => undefined);
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
    startServer: () => server.start(),
    stopServer: () => server.stop(),
    remove,
  };
}
