import type { TestingModule } from '@nestjs/testing';
import { QueueProducer } from 'nestjs-awa';
import { AwaTelemetryModule } from 'nestjs-awa/telemetry';
import { AwaMetricNames as N } from '../../lib/telemetry/telemetry.metrics.js';
import { startMultiApp } from '../module/multi-app.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { waitFor } from '../support/test-app.js';
import { pointsOf, registerOtelSdk, sumOf, type OtelSdk } from './otel-sdk.js';

/** Telemetry over two AwaModules (the default one and 'billing', on a database of its own). */
describe('AwaTelemetryModule with several AwaModules', () => {
  let main: TestDatabase;
  let billing: TestDatabase;
  let sdk: OtelSdk;
  let app: TestingModule;

  beforeAll(async () => {
    [main, billing] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    sdk = registerOtelSdk();
    app = await startMultiApp({
      mainUrl: main.url,
      billingUrl: billing.url,
      imports: [AwaTelemetryModule.forRoot() as never],
    });
  });
  afterAll(async () => {
    await app?.close();
    await sdk?.shutdown();
    await Promise.all([main?.drop(), billing?.drop()]);
  });

  it("counts the jobs of every module, and reports each module's leader", async () => {
    const producer = app.get(QueueProducer);
    const invoice = await producer.enqueue('invoice.issue', {});
    const mail = await producer.enqueue('mail.send', {});
    await waitFor(async () => (await producer.getJob(invoice.id, { queue: 'invoices' }))?.state === 'completed');
    await waitFor(async () => (await producer.getJob(mail.id))?.state === 'completed');
    const m = await waitFor(
      async () => {
        const collected = await sdk.collect();
        const leaders = pointsOf(collected.get(N.leader)).filter((p) => p.value === 1);
        return leaders.length === 2 ? collected : undefined;
      },
      15_000,
      'both leaders',
    );
    expect(sumOf(m.get(N.completed), { queue: 'invoices', kind: 'invoice.issue' })).toBe(1);
    expect(sumOf(m.get(N.completed), { queue: 'default', kind: 'mail.send' })).toBe(1);
    expect(
      pointsOf(m.get(N.leader))
        .map((p) => p.attributes.module ?? null)
        .sort(),
    ).toEqual(['billing', null]);
  });

  it("has each module's leader report the lag of the groups of its database, a named one's with its module", async () => {
    await queryOnce(
      billing.url,
      `INSERT INTO awa.event_subscriptions ("group", event, kind, kind_like) VALUES ('lagging', 'completed', 'no.such', 'no.such');
       INSERT INTO awa.event_group_positions ("group", position_tx) VALUES ('lagging', '0');
       INSERT INTO awa.job_events (job_id, event, kind, queue, state, attempt, at)
       VALUES (1, 'completed', 'no.such', 'invoices', 'completed', 1, now() - interval '1 minute')`,
    );
    const m = await waitFor(async () => {
      const collected = await sdk.collect();
      return sumOf(collected.get(N.eventGroupLag), { group: 'lagging' }) === 1 ? collected : undefined;
    });
    expect(pointsOf(m.get(N.eventGroupLag)).filter((p) => p.attributes.group === 'lagging')).toEqual([
      expect.objectContaining({ attributes: { group: 'lagging', module: 'billing' }, value: 1 }),
    ]);
  });
});
