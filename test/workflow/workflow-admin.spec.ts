import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AdminValidationError, JobHandler, QueueAdmin, QueueProducer, type Job } from 'nestjs-awa';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

/** Whether `flaky` jobs succeed: the retry test flips it. */
const flaky = { succeed: false };
const ran: string[] = [];

@Injectable()
class Steps {
  @JobHandler('step')
  async step(job: Job<{ name: string }>) {
    ran.push(job.args.name);
    return job.args.name;
  }

  @JobHandler('flaky')
  async flaky(job: Job<{ name: string }>) {
    ran.push(job.args.name);
    if (!flaky.succeed) throw new Error('not yet');
    return job.args.name;
  }
}

const LATER = () => new Date(Date.now() + 3_600_000);

/** QueueAdmin sees and operates whole workflows: read, list by state, cancel, retry. */
describe('workflow admin', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  let admin: QueueAdmin;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url, providers: [Steps] });
    producer = app.get(QueueProducer);
    admin = app.get(QueueAdmin);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });
  beforeEach(() => {
    ran.length = 0;
    flaky.succeed = false;
  });

  const workflowState = (id: string) =>
    waitFor(async () => {
      const w = await admin.getWorkflow(id);
      return w && w.state !== 'running' ? w.state : undefined;
    });

  it('getWorkflow returns its jobs, its edges and their states', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'a', kind: 'step', args: { name: 'a' }, runAt: LATER() },
      { ref: 'b', kind: 'step', args: { name: 'b' }, dependsOn: ['a'], onDependencyFailure: 'ignore' },
    ]);
    const view = await admin.getWorkflow(graph.workflowId);
    expect(view).toMatchObject({ id: graph.workflowId, state: 'running', jobs: 2 });
    expect(view!.jobList.map((j) => [j.id, j.state, j.waitingOn])).toEqual([
      [graph.ids.a, 'scheduled', 0],
      [graph.ids.b, 'waiting', 1],
    ]);
    expect(view!.edges).toEqual([
      { dependentId: graph.ids.b, dependencyId: graph.ids.a, ref: 'a', policy: 'ignore', state: null },
    ]);
    expect(await admin.getWorkflow('00000000-0000-4000-8000-000000000000')).toBeNull();
    expect(await caught(() => admin.getWorkflow('nope'))).toBeInstanceOf(AdminValidationError);
  });

  it('cancelWorkflow cancels every unfinished job of it, waiting ones included', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'a', kind: 'step', args: { name: 'a' }, runAt: LATER() },
      { ref: 'b', kind: 'step', args: { name: 'b' }, dependsOn: ['a'], onDependencyFailure: 'ignore' },
      { ref: 'c', kind: 'step', args: { name: 'c' }, dependsOn: ['b'] },
    ]);
    const result = await admin.cancelWorkflow(graph.workflowId);
    expect(result.count).toBe(3);
    expect(await workflowState(graph.workflowId)).toBe('cancelled');
    expect(ran).toEqual([]);
  });

  it('deleting a workflow’s jobs in bulk leaves nothing waiting', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'a', kind: 'step', args: { name: 'a' }, runAt: LATER() },
      { ref: 'b', kind: 'step', args: { name: 'b' }, dependsOn: ['a'] },
      { ref: 'c', kind: 'step', args: { name: 'c' }, dependsOn: ['a'], onDependencyFailure: 'ignore' },
    ]);
    await admin.deleteJobs({ workflowId: graph.workflowId, ids: [graph.ids.a!] });
    expect(await workflowState(graph.workflowId)).toBe('cancelled');
    expect((await producer.getJob(graph.ids.b!))?.state).toBe('cancelled');
    expect((await producer.getJob(graph.ids.c!))?.state).toBe('completed');
  });

  it('retryWorkflow reruns the failed job, then its cancelled dependents, in order; completed ones stay', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'ok', kind: 'step', args: { name: 'ok' } },
      { ref: 'bad', kind: 'flaky', args: { name: 'bad' }, maxAttempts: 1, dependsOn: ['ok'] },
      { ref: 'next', kind: 'step', args: { name: 'next' }, dependsOn: ['bad', 'ok'] },
    ]);
    expect(await workflowState(graph.workflowId)).toBe('failed');
    expect(ran).toEqual(['ok', 'bad']);
    flaky.succeed = true;
    expect(await admin.retryWorkflow(graph.workflowId)).toEqual({ retried: 2 });
    expect(await workflowState(graph.workflowId)).toBe('completed');
    expect(ran).toEqual(['ok', 'bad', 'bad', 'next']);
  });

  it('retrying one failed job leaves its already resolved dependents as they ended', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'bad', kind: 'flaky', args: { name: 'bad' }, maxAttempts: 1 },
      { ref: 'next', kind: 'step', args: { name: 'next' }, dependsOn: ['bad'] },
    ]);
    expect(await workflowState(graph.workflowId)).toBe('failed');
    flaky.succeed = true;
    expect(await admin.retryJob(graph.ids.bad!)).toEqual({ outcome: 'retried' });
    await waitFor(async () => (await producer.getJob(graph.ids.bad!))?.state === 'completed');
    expect((await producer.getJob(graph.ids.next!))?.state).toBe('cancelled');
    expect(await workflowState(graph.workflowId)).toBe('cancelled');
    expect(ran).toEqual(['bad', 'bad']);
  });

  it('listWorkflows lists them newest first, by state, a page at a time', async () => {
    const running = await producer.enqueueGraph([{ ref: 'a', kind: 'step', args: { name: 'a' }, runAt: LATER() }]);
    const done = await producer.enqueueGraph([{ ref: 'a', kind: 'step', args: { name: 'a' } }]);
    expect(await workflowState(done.workflowId)).toBe('completed');
    const page = await admin.listWorkflows({ state: 'running' });
    expect(page.workflows.map((w) => w.id)).toContain(running.workflowId);
    expect(page.workflows.every((w) => w.state === 'running')).toBe(true);
    const first = await admin.listWorkflows({ limit: 1 });
    expect(first.workflows.map((w) => w.id)).toEqual([done.workflowId]);
    const second = await admin.listWorkflows({ limit: 1, after: first.next! });
    expect(second.workflows.map((w) => w.id)).toEqual([running.workflowId]);
  });
});
