// Runs an embedded PostgreSQL for the sample, in a process of its own that the sample starts
// detached (see sample-database.service.ts), so a Ctrl-C in the terminal reaches the sample but
// not the database: the sample can still finish its jobs, then it stops this process.
// Prints "READY <port> <data directory>" once the server accepts connections. When stdin closes
// (the sample asks, or the sample died), it stops the server and removes the data directory.
// The server is the repository's shared embedded one (it also works as root in a checkout that
// other users cannot enter, where PostgreSQL, run as `postgres`, could not reach node_modules).
import { startEmbeddedServer, type EmbeddedServer } from '../../test/support/embedded-server.js';

async function main(): Promise<void> {
  // Declared before the close handler that may run while the server is still starting.
  // eslint-disable-next-line prefer-const
  let server: EmbeddedServer | undefined;
  process.stdin.on('close', () => void (server?.remove() ?? Promise.resolve()).finally(() => process.exit(0)));
  process.stdin.resume();
  server = await startEmbeddedServer({
    dirPrefix: 'awa-sample-pg-',
    flags: [],
    onError: (error) => process.stderr.write(`${String(error)}\n`),
  });
  process.stdout.write(`READY ${server.port} ${server.dataDir}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
