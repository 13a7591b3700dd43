import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  AdminValidationError,
  AwaModule,
  JobEventGroups,
  OnJobEvent,
  QueueProducer,
  type AwaModuleOptions,
  type JobEvent,
} from 'nestjs-awa';
import { JobEventMessages } from '../../lib/awa.messages.js';
import { AwaRegistry } from '../../lib/awa.registry.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';
import { InvoiceHandlers, MailHandlers, billingModule, startMultiApp } from './multi-app.js';

/** What each group was handed, as "group:queue:jobId". */
const delivered: string[] = [];

@Injectable()
class Ledger {
  // Every queue: a group in each module's database, each delivering its own module's events.
  @OnJobEvent('completed', { group: 'ledger' })
  all(event: JobEvent) {
    delivered.push(`ledger:${event.queue}:${event.jobId}`);
  }

  // A queue of the billing module only: a group in the billing database alone.
  @OnJobEvent('completed', { group: 'invoicing', queues: ['invoices'] })
  invoices(event: JobEvent) {
    delivered.push(`invoicing:${event.queue}:${event.jobId}`);
  }
}

const EVENTS: AwaModuleOptions = { jobEvents: { pollInterval: 50, leaseDuration: 5_000 } };

/** @OnJobEvent groups in an app of two AwaModules, each on a database of its own. */
describe('durable job events in several AwaModules', () => {
  let main: TestDatabase;
  let billing: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  let groups: JobEventGroups;

  beforeAll(async () => {
    [main, billing] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    app = await startMultiApp({
      mainUrl: main.url,
      billingUrl: billing.url,
      modules: [AwaModule.forRoot({ ...FAST_OPTIONS, ...EVENTS }), billingModule(EVENTS)],
      providers: [MailHandlers, InvoiceHandlers, Ledger],
    });
    producer = app.get(QueueProducer);
    groups = app.get(JobEventGroups);
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all([main?.drop(), billing?.drop()]);
  });

  const subscriptions = (db: TestDatabase) =>
    queryOnce<{ group: string; queue: string }>(
      db.url,
      'SELECT DISTINCT "group", queue FROM awa.event_subscriptions ORDER BY 1, 2',
    );
  const eventsIn = (db: TestDatabase) =>
    queryOnce<{ queue: string }>(db.url, 'SELECT DISTINCT queue FROM awa.job_events ORDER BY 1');
  const deliveredOf = (entry: string) => delivered.filter((d) => d === entry).length;

  it("subscribes each module's database to the group's queues of that module", async () => {
    expect(await subscriptions(main)).toEqual([{ group: 'ledger', queue: '*' }]);
    expect(await subscriptions(billing)).toEqual([
      { group: 'invoicing', queue: 'invoices' },
      { group: 'ledger', queue: '*' },
    ]);
  });

  it('drops from a database a group declared with none of its queues (left by an earlier declaration)', async () => {
    await queryOnce(main.url, `INSERT INTO awa.event_group_positions ("group", position_tx) VALUES ('invoicing', '1')`);
    await app.get(AwaRegistry).named(undefined)!.get(JobEventGroups).storeSubscriptions();
    expect(await queryOnce(main.url, 'SELECT "group" FROM awa.event_group_positions ORDER BY 1')).toEqual([
      { group: 'ledger' },
    ]);
  });

  it("records each job's events in its module's database, and each module delivers its own", async () => {
    const invoice = await producer.enqueue('invoice.issue', {});
    const mail = await producer.enqueue('mail.send', {});
    await waitFor(
      () =>
        deliveredOf(`ledger:invoices:${invoice.id}`) > 0 &&
        deliveredOf(`ledger:default:${mail.id}`) > 0 &&
        deliveredOf(`invoicing:invoices:${invoice.id}`) > 0,
      15_000,
      'both modules to deliver their events',
    );
    expect(delivered).not.toContain(`invoicing:default:${mail.id}`);
    expect(await eventsIn(main)).toEqual([{ queue: 'default' }]);
    expect(await eventsIn(billing)).toEqual([{ queue: 'invoices' }]);
  });

  it('lists the groups of every module, a named module by name, each with its holder', async () => {
    const all = await waitFor(async () => {
      const rows = await groups.groups();
      return rows.length === 3 && rows.every((g) => g.holder !== null && g.lagEvents === 0) ? rows : undefined;
    });
    expect(all.map((g) => `${g.group}@${g.module ?? '(default)'}`).sort()).toEqual([
      'invoicing@billing',
      'ledger@(default)',
      'ledger@billing',
    ]);
  });

  it('replays a group in the databases that have it', async () => {
    const invoice = await producer.enqueue('invoice.issue', {});
    await waitFor(() => deliveredOf(`invoicing:invoices:${invoice.id}`) > 0, 15_000, 'the invoice event');
    const result = await groups.replay('invoicing', new Date(Date.now() - 3_600_000));
    expect(result.replayed).toBe(true);
    await waitFor(() => deliveredOf(`invoicing:invoices:${invoice.id}`) > 1, 15_000, 'the replayed event');
    expect(await groups.replay('nobody', new Date())).toEqual({ replayed: false, firstEventAt: null });
  });

  it('skips in the module it is told; a group of two databases without one is refused', async () => {
    const twoModules = await caught(() => groups.skip('ledger'));
    expect(twoModules).toBeInstanceOf(AdminValidationError);
    expect(twoModules).toMatchObject({
      field: 'module',
      message: JobEventMessages.groupInModules('ledger', ['"billing"', '(default)']),
    });
    expect(await groups.skip('ledger', { module: 'billing' })).toBeNull(); // nothing waiting
    expect(await groups.skip('invoicing')).toBeNull(); // in one database: no module needed
    const unknown = await caught(() => groups.skip('ledger', { module: 'nope' }));
    expect(unknown).toMatchObject({ field: 'module' });
    expect(unknown).toBeInstanceOf(AdminValidationError);
  });

  it('drops a group in every database, or in the module it is told', async () => {
    expect(await groups.drop('ledger', { module: null })).toBe(true);
    expect(await subscriptions(main)).toEqual([]);
    expect((await subscriptions(billing)).map((s) => s.group)).toContain('ledger');
    expect(await groups.drop('ledger')).toBe(true);
    expect(await groups.drop('ledger')).toBe(false);
    expect(await subscriptions(billing)).toEqual([{ group: 'invoicing', queue: 'invoices' }]);
  });
});
