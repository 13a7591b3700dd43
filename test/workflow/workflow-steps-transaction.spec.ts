import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { EnqueueValidationError, JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const refused: unknown[] = [];

@Injectable()
class Split {
  /** Adds its pages, then writes its own row in job.transaction: both commit with its completion. */
  @JobHandler('tx.split')
  async split(job: Job<{ pages: number; doc: string }>) {
    job.addSteps(
      Array.from({ length: job.args.pages }, (_, i) => ({ ref: `page-${i + 1}`, kind: 'tx.page', args: { n: i + 1 } })),
    );
    await job.transaction((manager) => manager.query('INSERT INTO tx_docs (doc) VALUES ($1)', [job.args.doc]));
    refused.push(await caught(() => job.addSteps([{ ref: 'late', kind: 'tx.page', args: { n: 0 } }])));
  }

  @JobHandler('tx.page')
  async page(job: Job<{ n: number }>) {
    return job.args.n;
  }

  @JobHandler('tx.merge')
  async merge(job: Job) {
    return (await job.dependencyResults()).map((d) => d.ref);
  }
}

/** job.addSteps with job.transaction (docs/workflows.md, docs/exactly-once.md): one commit holds both. */
describe('steps added by a handler that completes in job.transaction', () => {
  let db: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url, providers: [Split] });
    await app.get(DataSource).query('CREATE TABLE tx_docs (doc text NOT NULL)');
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('commits the steps with the transaction, the merge waits for them, and a later addSteps is refused', async () => {
    const producer = app.get(QueueProducer);
    const graph = await producer.enqueueGraph([
      { ref: 'split', kind: 'tx.split', args: { pages: 2, doc: 'q3' } },
      { ref: 'merge', kind: 'tx.merge', args: {}, dependsOn: ['split'] },
    ]);
    const merged = await waitFor(async () => {
      const job = await producer.getJob(graph.ids.merge!);
      return job?.state === 'completed' ? job : undefined;
    });
    expect(merged.output).toEqual(['page-1', 'page-2', 'split']);
    expect(await app.get(DataSource).query('SELECT doc FROM tx_docs')).toEqual([{ doc: 'q3' }]);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(EnqueueValidationError);
  });
});
