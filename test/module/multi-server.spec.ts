import type { TestingModule } from '@nestjs/testing';
import pg from 'pg';
import { AwaModule, QueueProducer } from 'nestjs-awa';
import { AwaHealthIndicator, AwaHealthModule } from 'nestjs-awa/health';
import { TerminusModule } from '@nestjs/terminus';
import { startEmbeddedServer, type EmbeddedServer } from '../support/embedded-server.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';
import { billingModule, startMultiApp } from './multi-app.js';

/**
 * Queues split across two PostgreSQL servers (docs/multiple-databases.md): the default module on the
 * test server, the billing module on a second server of its own, which the test stops and starts.
 */
describe('two AwaModules on two PostgreSQL servers', () => {
  let main: TestDatabase;
  let second: EmbeddedServer;
  let app: TestingModule;
  let producer: QueueProducer;
  let health: AwaHealthIndicator;

  beforeAll(async () => {
    second = await startEmbeddedServer({ dirPrefix: 'awa-second-server-', flags: [], persistent: true });
    const admin = new pg.Client({ connectionString: second.adminUrl });
    await admin.connect();
    await admin.query('CREATE DATABASE billing');
    await admin.end();
    main = await createTestDatabase();
    app = await startMultiApp({
      mainUrl: main.url,
      billingUrl: second.adminUrl.replace(/\/postgres$/, '/billing'),
      modules: [AwaModule.forRoot(FAST_OPTIONS), billingModule()],
      imports: [TerminusModule.forRoot({ logger: false }) as never, AwaHealthModule as never],
    });
    producer = app.get(QueueProducer);
    health = app.get(AwaHealthIndicator);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await main?.drop();
    await second?.remove();
  });

  const completed = (id: string, queue: string) => async () =>
    (await producer.getJob(id, { queue }))?.state === 'completed' ? true : undefined;
  const healthOf = async () => (await health.isHealthy()).awa!;

  it("runs each queue's jobs on its own server", async () => {
    const invoice = await producer.enqueue('invoice.issue', { n: 1 });
    const mail = await producer.enqueue('mail.send', { n: 1 });
    await waitFor(completed(invoice.id, 'invoices'), 15_000, 'the invoice to complete on the second server');
    await waitFor(completed(mail.id, 'default'), 15_000, 'the mail to complete on the first server');
  });

  it('a stopped server stops only its own queues; once it is back, its module recovers by itself', async () => {
    // Stored before the stop, due after it: the restart must not lose it.
    const due = await producer.enqueue('invoice.issue', { n: 'due' }, { runAt: new Date(Date.now() + 1_500) });
    await second.stopServer();
    // The other server's queues go on.
    const mail = await producer.enqueue('mail.send', { n: 2 });
    await waitFor(completed(mail.id, 'default'), 15_000, 'the mail to complete while the second server is down');
    // The stopped server's queues refuse new work (the enqueue fails; nothing is half written).
    await expect(producer.enqueue('invoice.issue', { n: 2 })).rejects.toThrow();
    const down = await waitFor(async () => ((await healthOf()).status === 'down' ? healthOf() : undefined), 15_000);
    expect(JSON.stringify(down.problems)).toMatch(/billing/);

    await second.startServer();
    const invoice = await waitFor(
      () => producer.enqueue('invoice.issue', { n: 3 }).catch(() => undefined),
      30_000,
      'an enqueue into the second server once it is back',
    );
    await waitFor(completed(invoice.id, 'invoices'), 30_000, 'the invoice to complete after the restart');
    await waitFor(completed(due.id, 'invoices'), 30_000, 'the invoice stored before the stop to complete');
    await waitFor(async () => ((await healthOf()).status === 'up' ? true : undefined), 30_000, 'health up again');
  }, 90_000);
});
