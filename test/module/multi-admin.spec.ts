import type { TestingModule } from '@nestjs/testing';
import { TerminusModule } from '@nestjs/terminus';
import { AdminValidationError, AwaModule, EnqueueValidationError, QueueAdmin, QueueProducer } from 'nestjs-awa';
import { AwaDashboardModule } from 'nestjs-awa/dashboard';
import { AwaHealthIndicator, AwaHealthModule } from 'nestjs-awa/health';
import { DashboardService } from '../../lib/dashboard/dashboard.service.js';
import { listInstances } from '../../lib/dashboard/dashboard.sql.js';
import { AdminMessages } from '../../lib/awa.messages.js';
import { flowKeysSql } from '../../lib/sql/index.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';
import { BILLING_REPLICA, billingModule, startMultiApp } from './multi-app.js';

/** QueueAdmin and the health indicator over two AwaModules; the billing one reads from a replica DataSource. */
describe('several AwaModules: admin, health and a read replica', () => {
  let main: TestDatabase;
  let billing: TestDatabase;
  let app: TestingModule;
  let admin: QueueAdmin;
  let producer: QueueProducer;

  /** The statements last run by the backends of `application_name`, on the billing database. */
  /**
   * The last statement of each session of `applicationName`, cut to its first 1,000 characters:
   * pg_stat_activity keeps only the first track_activity_query_size bytes (1,024 by default).
   */
  const lastQueries = async (applicationName: string) =>
    (
      await queryOnce<{ query: string }>(
        billing.url,
        'SELECT query FROM pg_stat_activity WHERE datname = $1 AND application_name = $2',
        [billing.name, applicationName],
      )
    ).map((r) => shown(r.query));
  const shown = (text: string) => text.slice(0, 1_000);

  beforeAll(async () => {
    [main, billing] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    app = await startMultiApp({
      mainUrl: main.url,
      billingUrl: billing.url,
      replica: true,
      modules: [AwaModule.forRoot(FAST_OPTIONS), billingModule({ readDataSource: BILLING_REPLICA })],
      imports: [
        TerminusModule.forRoot({ logger: false }) as never,
        AwaHealthModule as never,
        AwaDashboardModule.forRoot({ path: '/awa' }),
      ],
    });
    admin = app.get(QueueAdmin);
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all([main?.drop(), billing?.drop()]);
  });

  it('pauses and resumes a queue in the database of its module', async () => {
    await admin.pauseQueue('invoices');
    const paused = (db: TestDatabase) =>
      queryOnce<{ name: string }>(db.url, 'SELECT name FROM awa.queues WHERE paused_at IS NOT NULL');
    expect((await paused(billing)).map((q) => q.name)).toEqual(['invoices']);
    expect(await paused(main)).toEqual([]);
    const states = await admin.queueStates();
    expect(states.map((q) => [q.name, q.paused])).toEqual(
      expect.arrayContaining([
        ['default', false],
        ['invoices', true],
      ]),
    );
    await admin.resumeQueue('invoices');
    expect(await paused(billing)).toEqual([]);
  });

  it("lists, counts and deletes the jobs of a module's queues; refuses a filter over two modules", async () => {
    const later = new Date(Date.now() + 3_600_000);
    const invoice = await producer.enqueue('invoice.issue', {}, { runAt: later });
    await producer.enqueue('mail.send', {}, { runAt: later });
    const page = await admin.listJobs({ queues: ['invoices'], states: ['scheduled'] });
    expect(page.jobs.map((j) => [j.id, j.kind])).toEqual([[invoice.id, 'invoice.issue']]);
    expect(await admin.countJobs({ queues: ['invoices'], states: ['scheduled'] })).toBe(1);
    expect(await admin.getJob(invoice.id, { queue: 'invoices' })).toMatchObject({ kind: 'invoice.issue' });
    const error = await caught(() => admin.listJobs({ queues: ['default', 'invoices'] }));
    expect(error).toBeInstanceOf(AdminValidationError);
    expect(error).toMatchObject({
      field: 'filter.queues',
      message: AdminMessages.filterSpansModules('(default)', '"billing"'),
    });
    expect(await admin.deleteJobs({ queues: ['invoices'], states: ['scheduled'] })).toMatchObject({ deleted: 1 });
    expect(await admin.countJobs({ queues: ['invoices'], states: ['scheduled'] })).toBe(0);
    expect(await admin.countJobs({ states: ['scheduled'] })).toBe(1); // the default module's mail job
  });

  // Both DataSources reach one database here, so the write is seen by the read; the backends'
  // application_name tells which DataSource ran what.
  it("sends the billing module's admin reads to its readDataSource, and its writes to its DataSource", async () => {
    await admin.setKeyConcurrency('invoices', 'customer-1', 2);
    const keys = await admin.keyStates('invoices');
    expect(keys.keys.map((k) => [k.key, k.limit])).toEqual([['customer-1', 2]]);
    expect(await lastQueries('awa-replica')).toContain(shown(flowKeysSql.listFlowKeys.text));
    expect(await lastQueries('awa-replica')).not.toContain(shown(flowKeysSql.setKeyLimit.text));
    expect(await lastQueries('awa-billing')).not.toContain(shown(flowKeysSql.listFlowKeys.text));
  });

  it('is healthy when every module is, and shows each named module', async () => {
    const health = app.get(AwaHealthIndicator);
    const result = await waitFor(async () => {
      const r = (await health.isHealthy()).awa!;
      return r.status === 'up' ? r : undefined;
    });
    expect(result).toMatchObject({ queues: { default: {} }, modules: { billing: { queues: { invoices: {} } } } });
  });

  it("shows every module's queues and instances on the dashboard, and reads a module's jobs from its replica", async () => {
    const dashboard = app.get(DashboardService);
    const later = new Date(Date.now() + 3_600_000);
    const invoice = await producer.enqueue('invoice.issue', { n: 3 }, { runAt: later });
    expect((await dashboard.queues()).map((q) => q.name)).toEqual(expect.arrayContaining(['default', 'invoices']));
    expect(await dashboard.instances()).toHaveLength(2);
    expect(await lastQueries('awa-replica')).toContain(shown(listInstances.text));
    const page = await dashboard.jobs({ queues: ['invoices'], states: ['scheduled'] }, { after: null, limit: 10 });
    expect(page.jobs.map((j) => j.id)).toEqual([invoice.id]);
    expect((await dashboard.job(invoice.id, 'invoices')).job).toMatchObject({ kind: 'invoice.issue', args: { n: 3 } });
    expect((await dashboard.throughput()).length).toBeGreaterThan(0);
  });

  describe('workflows', () => {
    const later = () => new Date(Date.now() + 3_600_000);
    const jobsIn = (db: TestDatabase) =>
      queryOnce<{ queue: string }>(db.url, 'SELECT queue FROM awa.all_jobs WHERE workflow_id = $1', [workflowId]);
    let workflowId: string;

    it("inserts a workflow in its queues' module, and refuses one spanning two modules", async () => {
      const error = await caught(() =>
        producer.enqueueGraph([
          { ref: 'mail', kind: 'mail.send', args: {} },
          { ref: 'invoice', kind: 'invoice.issue', args: {}, dependsOn: ['mail'] },
        ]),
      );
      expect(error).toBeInstanceOf(EnqueueValidationError);
      expect(error).toMatchObject({ field: 'jobs', message: expect.stringContaining('one database') });
      ({ workflowId } = await producer.enqueueGraph([
        { ref: 'issue', kind: 'invoice.issue', args: {}, runAt: later() },
        { ref: 'send', kind: 'invoice.issue', args: {}, dependsOn: ['issue'] },
      ]));
      expect((await jobsIn(billing)).map((j) => j.queue)).toEqual(['invoices', 'invoices']);
      expect(await jobsIn(main)).toEqual([]);
    });

    it("reads a named module's workflow by its id alone, or in that module; lists it there", async () => {
      expect(await admin.getWorkflow(workflowId)).toMatchObject({ id: workflowId, state: 'running', jobs: 2 });
      expect(await admin.getWorkflow(workflowId, { module: 'billing' })).toMatchObject({ jobs: 2 });
      expect((await admin.listWorkflows({ module: 'billing' })).workflows.map((w) => w.id)).toEqual([workflowId]);
      expect((await admin.listWorkflows()).workflows.map((w) => w.id)).not.toContain(workflowId);
      expect(await app.get(DashboardService).workflow(workflowId)).toMatchObject({ id: workflowId, jobs: 2 });
      const unknown = await caught(() => admin.getWorkflow(workflowId, { module: 'nope' }));
      expect(unknown).toBeInstanceOf(AdminValidationError);
      expect(unknown).toMatchObject({ field: 'where.module', message: expect.stringContaining('"billing"') });
    });

    it("cancels and retries a named module's workflow by its id", async () => {
      expect(await admin.cancelWorkflow(workflowId)).toMatchObject({ count: 2 });
      await waitFor(
        async () => (await admin.getWorkflow(workflowId))?.state === 'cancelled',
        15_000,
        'the workflow cancelled',
      );
      // Paused, so the retried jobs wait for the cancel below instead of running at once.
      await admin.pauseQueue('invoices');
      try {
        expect(await admin.retryWorkflow(workflowId)).toEqual({ retried: 2 });
        expect((await admin.getWorkflow(workflowId))?.state).toBe('running');
        expect(await admin.cancelWorkflow(workflowId, { module: 'billing' })).toMatchObject({ count: 2 });
      } finally {
        await admin.resumeQueue('invoices');
      }
    });
  });
});
