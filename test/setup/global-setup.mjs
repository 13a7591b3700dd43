// Gives every test file a real PostgreSQL: DATABASE_URL when set, else an embedded PostgreSQL on a
// free port with a temporary data directory. Test files create their own databases from
// AWA_TEST_ADMIN_URL (see test/support/test-database.ts).
import { existsSync } from 'node:fs';
import { buildDashboardUi } from '../../dashboard-ui/build.mjs';

// The shared helper, as built by `npm run build:apps` (npm test builds first; Jest has not compiled
// any TypeScript yet when it runs this file).
const EMBEDDED_SERVER = new URL('../../build/test/support/embedded-server.js', import.meta.url);

export default async function globalSetup() {
  // ts-jest runs lib/ from source: the dashboard's bundled assets must exist (npm run build makes them too).
  buildDashboardUi();
  if (process.env.DATABASE_URL) {
    process.env.AWA_TEST_ADMIN_URL = process.env.DATABASE_URL;
    console.log(`\n[awa tests] using DATABASE_URL (${new URL(process.env.DATABASE_URL).host})`);
    return;
  }
  if (!existsSync(EMBEDDED_SERVER)) {
    throw new Error(
      `${EMBEDDED_SERVER.pathname} is missing: run \`npm run build && npm run build:apps\` (npm test does), or set DATABASE_URL`,
    );
  }
  const { startEmbeddedServer } = await import(EMBEDDED_SERVER.href);
  const server = await startEmbeddedServer({
    dirPrefix: 'awa-test-pg-',
    flags: ['-c', 'max_connections=300', '-c', 'fsync=off'],
  });
  globalThis.__AWA_EMBEDDED_PG__ = server;
  process.env.AWA_TEST_ADMIN_URL = server.adminUrl;
  console.log(`\n[awa tests] embedded PostgreSQL on port ${server.port}`);
}
