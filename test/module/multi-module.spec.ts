import type { TestingModule } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import { SchedulerRegistry } from '@nestjs/schedule';
import { AwaModule, EnqueueValidationError, QueueProducer, type JobRecord } from 'nestjs-awa';
import type { DataSource } from 'typeorm';
import { AwaMessages } from '../../lib/awa.messages.js';
import { AwaRegistry } from '../../lib/awa.registry.js';
import { MaintenanceService } from '../../lib/maintenance/maintenance.service.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';
import { BILLING_DB, billingModule, ran, startMultiApp } from './multi-app.js';

/** Two AwaModules, each on a database of its own: routing by queue, and a runtime per module. */
describe('several AwaModules', () => {
  let main: TestDatabase;
  let billing: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;

  const jobsIn = (db: TestDatabase) =>
    queryOnce<{ id: string; kind: string; queue: string }>(
      db.url,
      'SELECT id, kind, queue FROM awa.all_jobs ORDER BY id',
    );

  beforeAll(async () => {
    [main, billing] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    app = await startMultiApp({ mainUrl: main.url, billingUrl: billing.url });
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all([main?.drop(), billing?.drop()]);
  });

  it('inserts each job in the database of its queue, and runs it with the handler of its module', async () => {
    const invoice = await producer.enqueue('invoice.issue', { n: 1 });
    const mail = await producer.enqueue('mail.send', { to: 'a@b.c' });
    expect(invoice.queue).toBe('invoices');
    expect(mail.queue).toBe('default');
    expect((await jobsIn(billing)).map((j) => j.kind)).toContain('invoice.issue');
    expect((await jobsIn(main)).map((j) => j.kind)).not.toContain('invoice.issue');
    expect((await jobsIn(main)).map((j) => j.kind)).toContain('mail.send');

    const done = async (id: string, queue: string) =>
      (await producer.getJob(id, { queue }))?.state === 'completed' ? true : undefined;
    await waitFor(() => done(invoice.id, 'invoices'), 15_000, 'the invoice job to complete');
    await waitFor(() => done(mail.id, 'default'), 15_000, 'the mail job to complete');
    expect(ran).toEqual(
      expect.arrayContaining([
        { kind: 'invoice.issue', id: invoice.id, queue: 'invoices' },
        { kind: 'mail.send', id: mail.id, queue: 'default' },
      ]),
    );
  });

  it('gives each module its own instance row, leader and timers', async () => {
    const registry = app.get(AwaRegistry);
    expect(new Set(registry.modules.map((m) => m.name))).toEqual(new Set([undefined, 'billing']));
    await waitFor(() => registry.modules.every((m) => m.get(MaintenanceService).isLeader), 15_000, 'two leaders');
    for (const db of [main, billing]) expect(await queryOnce(db.url, 'SELECT id FROM awa.instances')).toHaveLength(1);
    const schedules = (db: TestDatabase) => queryOnce<{ kind: string }>(db.url, 'SELECT kind FROM awa.schedules');
    expect(await schedules(billing)).toEqual([{ kind: 'invoice.issue' }]);
    expect(await schedules(main)).toEqual([]);
    const intervals = app.get(SchedulerRegistry).getIntervals();
    expect(intervals).toEqual(
      expect.arrayContaining(['awa.heartbeat', 'awa.heartbeat:billing', 'awa.maintenance', 'awa.maintenance:billing']),
    );
  });

  it("refuses a manager of another DataSource than the queue's, before touching the database", async () => {
    const before = (await jobsIn(billing)).length;
    const mainDs = app.get<DataSource>(getDataSourceToken());
    const error = await caught(() =>
      mainDs.transaction((manager) => producer.enqueue('invoice.issue', {}, { manager })),
    );
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({
      field: 'manager',
      message: AwaMessages.enqueueManagerOtherDatabase('invoices', '"billing"'),
    });
    expect(await jobsIn(billing)).toHaveLength(before);

    const billingDs = app.get<DataSource>(getDataSourceToken(BILLING_DB));
    const job = await billingDs.transaction((manager) => producer.enqueue('invoice.issue', {}, { manager }));
    expect((await jobsIn(billing)).map((j) => j.id)).toContain(job.id);
  });

  it('refuses an enqueueMany whose jobs go to two modules, and takes one of either', async () => {
    const error = await caught(() =>
      producer.enqueueMany([
        { kind: 'mail.send', args: {} },
        { kind: 'invoice.issue', args: {} },
      ]),
    );
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({
      field: 'items',
      message: AwaMessages.enqueueManySpansModules('(default)', '"billing"'),
    });
    const jobs = await producer.enqueueMany([
      { kind: 'invoice.issue', args: { n: 2 } },
      { kind: 'other', queue: 'invoices', args: {}, runAt: new Date(Date.now() + 3_600_000) },
    ]);
    expect(jobs.map((j) => j.queue)).toEqual(['invoices', 'invoices']);
  });

  it('reads and cancels a job of a named module by its queue; without it, in the default module', async () => {
    const later = new Date(Date.now() + 3_600_000);
    const job = await producer.enqueue('invoice.issue', {}, { runAt: later });
    // Ids are per database: without its queue, the id names a job of the default module's, if any.
    expect((await producer.getJob(job.id))?.queue).not.toBe('invoices');
    expect(await producer.getJob(job.id, { queue: 'invoices' })).toMatchObject<Partial<JobRecord>>({
      kind: 'invoice.issue',
      state: 'scheduled',
    });
    expect(await producer.cancel(job.id, { queue: 'invoices' })).toEqual({
      outcome: 'cancelled',
      previousState: 'scheduled',
    });
    expect((await producer.getJob(job.id, { queue: 'invoices' }))?.state).toBe('cancelled');
  });
});

/** Misconfigured modules fail the boot, naming what is wrong. */
describe('several AwaModules: boot errors', () => {
  let main: TestDatabase;
  let billing: TestDatabase;
  beforeAll(async () => {
    [main, billing] = await Promise.all([createTestDatabase(), createTestDatabase()]);
  });
  afterAll(async () => {
    await Promise.all([main?.drop(), billing?.drop()]);
  });
  const boot = (modules: ReturnType<typeof AwaModule.forRoot>[]) =>
    caught(() => startMultiApp({ mainUrl: main.url, billingUrl: billing.url, modules, providers: [] }));

  it('refuses a queue declared by two modules, naming both', async () => {
    const error = await boot([AwaModule.forRoot({ ...FAST_OPTIONS, queues: { invoices: {} } }), billingModule()]);
    expect(error).toMatchObject({
      name: 'AwaOptionError',
      path: 'queues.invoices',
      problem: AwaMessages.queueInTwoModules('"billing"', '(default)'),
    });
  });

  it('refuses two modules of one name', async () => {
    const error = await boot([billingModule(), billingModule({ dataSource: undefined, queues: { other: {} } })]);
    expect(error).toMatchObject({ name: 'AwaSetupError', message: AwaMessages.moduleNameTaken('"billing"') });
  });

  it('refuses two modules on one DataSource', async () => {
    const error = await boot([AwaModule.forRoot(FAST_OPTIONS), billingModule({ dataSource: undefined })]);
    expect(error).toMatchObject({
      name: 'AwaSetupError',
      message: AwaMessages.dataSourceShared('"billing"', '(default)'),
    });
  });

  it('refuses a named module without a queue of its own, and a forRootAsync factory that returns a name', async () => {
    expect(await caught(() => billingModule({ queues: {} }))).toMatchObject({
      name: 'AwaOptionError',
      path: 'queues',
    });
    const error = await boot([
      AwaModule.forRoot(FAST_OPTIONS),
      AwaModule.forRootAsync({ dataSource: BILLING_DB, useFactory: () => ({ name: 'billing' }) as object }),
    ]);
    expect(error).toMatchObject({ name: 'AwaOptionError', path: 'name' });
  });

  it('boots a named module through forRootAsync, beside the default one', async () => {
    const app = await startMultiApp({
      mainUrl: main.url,
      billingUrl: billing.url,
      modules: [
        AwaModule.forRoot(FAST_OPTIONS),
        AwaModule.forRootAsync({
          name: 'billing',
          dataSource: BILLING_DB,
          useFactory: async () => ({ ...FAST_OPTIONS, queues: { invoices: {} } }),
        }),
      ],
    });
    try {
      const job = await app.get(QueueProducer).enqueue('invoice.issue', {});
      expect(await queryOnce(billing.url, 'SELECT id FROM awa.all_jobs WHERE id = $1', [job.id])).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});
