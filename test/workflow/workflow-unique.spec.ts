import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  EnqueueValidationError,
  JobHandler,
  QueueAdmin,
  QueueProducer,
  UniqueConflictError,
  type Job,
  type StepJob,
} from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const LATER = () => new Date(Date.now() + 3_600_000);

@Injectable()
class UniqueSteps {
  @JobHandler('u.step') step() {}

  /** Tries to add a unique step (refused: steps cannot be unique). */
  @JobHandler('u.split') split(job: Job) {
    job.addSteps([{ ref: 's', kind: 'u.step', args: {}, unique: {} } as StepJob]);
  }
}

/** `unique` on the jobs of enqueueGraph/enqueueFlow: a held key refuses the whole graph, naming the ref. */
describe('unique workflow jobs', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  const jobCount = async () =>
    (await app.get(DataSource).query('SELECT count(*)::int AS n FROM awa.all_jobs'))[0].n as number;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url, providers: [UniqueSteps] });
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('inserts a unique job of a graph with its key; waiting, it blocks a duplicate enqueue', async () => {
    const { ids } = await producer.enqueueGraph([
      { ref: 'first', kind: 'u.step', args: {}, runAt: LATER() },
      { ref: 'sync', kind: 'u.sync', args: { user: 1 }, unique: { byArgs: true }, dependsOn: ['first'] },
    ]);
    expect(await producer.getJob(ids.sync!)).toMatchObject({ state: 'waiting', uniqueKey: expect.any(String) });
    const duplicate = await producer.enqueue('u.sync', { user: 1 }, { unique: { byArgs: true } });
    expect(duplicate).toMatchObject({ id: ids.sync, duplicate: true });
  });

  it('refuses the whole graph when a job holds the key of one of its jobs, naming its ref; nothing is inserted', async () => {
    await producer.enqueue('u.report', { day: 1 }, { unique: { byArgs: true }, runAt: LATER() });
    const before = await jobCount();
    const error = await caught(() =>
      producer.enqueueGraph([
        { ref: 'fetch', kind: 'u.step', args: {} },
        { ref: 'report', kind: 'u.report', args: { day: 1 }, unique: { byArgs: true }, dependsOn: ['fetch'] },
      ]),
    );
    expect(error).toBeInstanceOf(UniqueConflictError);
    expect(error).toMatchObject({ code: 'AWA_UNIQUE_CONFLICT', ref: 'report' });
    expect((error as Error).message).toContain('"report"');
    expect(await jobCount()).toBe(before);
  });

  it('names the ref of a job with a period (the stored key has its bucket) and in a flow', async () => {
    const unique = { key: 'digest', period: 3_600_000 };
    await producer.enqueue('u.digest', {}, { unique, runAt: LATER() });
    const error = await caught(() =>
      producer.enqueueFlow({
        ref: 'mail',
        kind: 'u.step',
        args: {},
        children: [{ ref: 'digest', kind: 'u.digest', args: {}, unique }],
      }),
    );
    expect(error).toMatchObject({ ref: 'digest' });
  });

  it('in the caller transaction: the conflict throws, and the transaction rolls back', async () => {
    await producer.enqueue('u.tx', {}, { unique: {}, runAt: LATER() });
    const before = await jobCount();
    const error = await caught(() =>
      app.get(DataSource).transaction(async (manager) => {
        await producer.enqueue('u.step', {}, { manager });
        await producer.enqueueGraph([{ ref: 'tx', kind: 'u.tx', args: {}, unique: {} }], { manager });
      }),
    );
    expect(error).toMatchObject({ ref: 'tx' });
    expect(await jobCount()).toBe(before);
  });

  it('refuses two jobs of one graph with one key before the database, naming both', async () => {
    const error = await caught(() =>
      producer.enqueueGraph([
        { ref: 'a', kind: 'u.same', args: {}, unique: {} },
        { ref: 'b', kind: 'u.same', args: {}, unique: {}, dependsOn: ['a'] },
      ]),
    );
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({ field: 'unique', index: 1, message: expect.stringContaining('"a" and "b"') });
  });

  it('once the graph job finished, its key is free again (default states)', async () => {
    const { ids } = await producer.enqueueGraph([{ ref: 'once', kind: 'u.step', args: {}, unique: { key: 'once' } }]);
    await waitFor(async () => (await producer.getJob(ids.once!))?.state === 'completed', 15_000, 'completed');
    const again = await producer.enqueueGraph([{ ref: 'once', kind: 'u.step', args: {}, unique: { key: 'once' } }]);
    expect(again.ids.once).not.toBe(ids.once);
  });

  it('refuses a final state in unique.states of a workflow job (a finished one must free its key)', async () => {
    const states = ['scheduled', 'available', 'running', 'retryable', 'completed'] as const;
    const error = await caught(() =>
      producer.enqueueGraph([{ ref: 'kept', kind: 'u.step', args: {}, unique: { states: [...states] } }]),
    );
    expect(error).toMatchObject({ field: 'unique.states', index: 0, message: expect.stringContaining('"kept"') });
  });

  it('retryWorkflow refuses to retry a workflow whose unique job lost its key meanwhile: nothing is retried', async () => {
    const admin = app.get(QueueAdmin);
    const { workflowId, ids } = await producer.enqueueGraph([
      { ref: 'r', kind: 'u.step', args: {}, unique: { key: 'retry-me' }, runAt: LATER() },
      { ref: 'after', kind: 'u.step', args: {}, dependsOn: ['r'] },
    ]);
    await admin.cancelWorkflow(workflowId);
    const holder = await producer.enqueue('u.other', {}, { unique: { key: 'retry-me' }, runAt: LATER() });
    expect(holder.duplicate).toBe(false);
    const error = await caught(() => admin.retryWorkflow(workflowId));
    expect(error).toBeInstanceOf(UniqueConflictError);
    expect((error as Error).message).toContain('nothing of the workflow was retried');
    expect(await producer.getJob(ids.r!)).toMatchObject({ state: 'cancelled' });
    expect(await producer.getJob(ids.after!)).toMatchObject({ state: 'cancelled' });
  });

  it('job.addSteps refuses a unique step: the attempt fails with the refusal', async () => {
    const { id } = await producer.enqueue('u.split', {}, { maxAttempts: 1 });
    await waitFor(async () => (await producer.getJob(id))?.state === 'failed', 15_000, 'failed');
    expect(JSON.stringify((await producer.getJob(id))?.errors)).toContain('cannot be unique');
  });
});
