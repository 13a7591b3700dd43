import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { EnqueueValidationError, JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { completeWithSteps, encodeSteps } from '../../lib/worker/step-completion.js';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const ran: string[] = [];
const refused: unknown[] = [];

@Injectable()
class Steps {
  /** Splits into `pages` page jobs known only now; the merge waiting for this job waits for them too. */
  @JobHandler('split')
  async split(job: Job<{ pages: number }>) {
    ran.push('split');
    job.addSteps(
      Array.from({ length: job.args.pages }, (_, i) => ({ ref: `page-${i + 1}`, kind: 'page', args: { n: i + 1 } })),
    );
    refused.push(await caught(() => job.addSteps([{ ref: 'again', kind: 'page', args: { n: 0 } }])));
    return { pages: job.args.pages };
  }

  @JobHandler('page')
  async page(job: Job<{ n: number }>) {
    ran.push(`page:${job.args.n}`);
    return job.args.n * 10;
  }

  @JobHandler('merge')
  async merge(job: Job) {
    ran.push('merge');
    return (await job.dependencyResults()).map((d) => [d.ref, d.output]);
  }
}

/** A handler adds steps at run time, atomically with its completion: split into N pages, then merge. */
describe('workflow steps added at run time', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url, providers: [Steps] });
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('the merge waits for the pages the split added, and reads their outputs', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'split', kind: 'split', args: { pages: 3 } },
      { ref: 'merge', kind: 'merge', args: {}, dependsOn: ['split'] },
    ]);
    const merged = await waitFor(async () => {
      const job = await producer.getJob(graph.ids.merge!);
      return job?.state === 'completed' ? job : undefined;
    });
    expect(merged.output).toEqual([
      ['page-1', 10],
      ['page-2', 20],
      ['page-3', 30],
      ['split', { pages: 3 }],
    ]);
    expect(ran[0]).toBe('split');
    expect(ran[ran.length - 1]).toBe('merge');
    expect(refused[0]).toBeInstanceOf(EnqueueValidationError);
    const [row] = await app
      .get(AwaDatabase)
      .dataSource.query(`SELECT count(DISTINCT workflow_id)::int AS n FROM awa.all_jobs WHERE workflow_id = $1`, [
        graph.workflowId,
      ]);
    expect(row.n).toBe(1);
  });

  it('an attempt that lost its lease writes neither its completion nor its steps', async () => {
    const graph = await producer.enqueueGraph([
      { ref: 'split', kind: 'split', args: { pages: 1 }, runAt: new Date(Date.now() + 3_600_000) },
      { ref: 'merge', kind: 'merge', args: {}, dependsOn: ['split'] },
    ]);
    const database = app.get(AwaDatabase);
    const id = graph.ids.split!;
    await database.dataSource.query(
      `WITH j AS (UPDATE awa.jobs SET state = 'running', attempt = 1, run_lease = 2 WHERE id = $1 RETURNING id)
       INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, claimed_at)
       SELECT id, 2, 'elsewhere', now(), now() FROM j`,
      [id],
    );
    // The step is due in an hour: the app's workers leave it (and so the merge) alone while the test reads.
    const later = new Date(Date.now() + 3_600_000);
    const steps = encodeSteps(
      [{ ref: 'p', kind: 'page', args: { n: 1 }, runAt: later }],
      {},
      resolveAwaOptions({}),
      () => 'default',
    );
    const stale = { id, runLease: '1', outputJson: undefined, outputNote: undefined };
    expect(await completeWithSteps(database, stale, steps)).toBe(false);
    const count = async () =>
      (
        await database.dataSource.query(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE workflow_id = $1`, [
          graph.workflowId,
        ])
      )[0].n;
    expect(await count()).toBe(2);
    expect(await completeWithSteps(database, { ...stale, runLease: '2' }, steps)).toBe(true);
    expect(await count()).toBe(3);
    const merge = await producer.getJob(graph.ids.merge!);
    expect(merge?.state).toBe('waiting');
  });
});
