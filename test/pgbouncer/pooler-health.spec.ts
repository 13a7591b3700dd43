import { TerminusModule } from '@nestjs/terminus';
import type { TestingModule } from '@nestjs/testing';
import type { AwaModuleOptions } from 'nestjs-awa';
import { AwaHealthIndicator, AwaHealthModule } from 'nestjs-awa/health';
import { PgBouncer, pgbouncerMissing } from '../support/pgbouncer.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { adminUrl, createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const missing = pgbouncerMissing();
if (missing) process.stdout.write(`[awa tests] PgBouncer tests skipped: ${missing}\n`);

/** The shipped defaults (heartbeat every 30 s, statementTimeout 30 s): the health bound is theirs. */
const DEFAULTS: AwaModuleOptions = { migrationsRun: true };

/**
 * A producer-only instance (no handlers, so no claim loop to stall) whose PostgreSQL is
 * blackholed: the TCP proxy between it (or its PgBouncer) and the server forwards nothing, not even
 * a close. Health must go down within its documented bound, and up again once the cut heals.
 */
describe.each([
  ['direct', false],
  ['transaction-pooler behind PgBouncer', true],
] as const)('health of a producer-only instance, connectionMode %s, PostgreSQL blackholed', (_, viaBouncer) => {
  const run = viaBouncer && missing ? it.skip : it;
  let db: TestDatabase;
  let proxy: TcpProxy;
  let bouncer: PgBouncer | undefined;
  let app: TestingModule | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    const server = new URL(adminUrl());
    proxy = await TcpProxy.start({ host: server.hostname, port: Number(server.port || 5432) });
    if (viaBouncer && !missing) bouncer = await PgBouncer.start(TcpProxy.url(adminUrl(), proxy));
  });
  afterAll(async () => {
    proxy?.thaw();
    await app?.close();
    await bouncer?.stop();
    await proxy?.close();
    await db?.drop();
  });

  run('goes down while the database does not answer, and up again after', async () => {
    app = await startTestApp({
      url: bouncer ? bouncer.urlFor(db.url) : TcpProxy.url(db.url, proxy),
      awa: { ...DEFAULTS, connectionMode: viaBouncer ? 'transaction-pooler' : 'direct' },
      imports: [TerminusModule, AwaHealthModule],
      defaultOptions: true,
    });
    const health = app.get(AwaHealthIndicator);
    const status = async () => (await health.isHealthy()).awa;
    await waitFor(async () => (await status()).status === 'up', 15_000, 'up');

    proxy.freeze(() => true, { newOnes: true });
    const down = await waitFor(
      async () => {
        const s = await status();
        return s.status === 'down' ? s : null;
      },
      20_000, // the documented bound is 10 s at most (2.5 s with these defaults); room for a loaded machine
      'down',
    );
    expect(down).toMatchObject({ connected: false, queues: {} });

    proxy.thaw();
    await waitFor(async () => (await status()).status === 'up', 30_000, 'up again');
  });
});
