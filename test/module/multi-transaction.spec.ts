import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { waitFor } from '../support/test-app.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { InvoiceHandlers, MailHandlers, startMultiApp } from './multi-app.js';

@Injectable()
class Booking {
  constructor(private readonly producer: QueueProducer) {}

  /** A job of the billing module: its transaction must be on the billing database. */
  @JobHandler('invoice.book', { queue: 'invoices' })
  book(job: Job<{ n: number }>) {
    return job.transaction(async (manager) => {
      await manager.query('INSERT INTO public.booked (job_id, n) VALUES ($1, $2)', [job.id, job.args.n]);
      const next = await this.producer.enqueue('invoice.issue', { after: job.id }, { manager });
      return { next: next.id };
    });
  }
}

/** job.transaction with several AwaModules: the manager is of the DataSource of the job's module. */
describe('job.transaction with several AwaModules', () => {
  let main: TestDatabase;
  let billing: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    [main, billing] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    // Only in the billing database: a write through the main DataSource would fail.
    await queryOnce(billing.url, 'CREATE TABLE public.booked (job_id bigint NOT NULL, n int NOT NULL)');
    app = await startMultiApp({
      mainUrl: main.url,
      billingUrl: billing.url,
      providers: [MailHandlers, InvoiceHandlers, Booking],
    });
  });
  afterAll(async () => {
    await app?.close();
    await Promise.all([main?.drop(), billing?.drop()]);
  });

  it("commits the handler's writes and a follow-up job in the job's own database, with its completion", async () => {
    const producer = app.get(QueueProducer);
    const { id } = await producer.enqueue('invoice.book', { n: 7 });
    const job = await waitFor(
      async () => {
        const record = await producer.getJob(id, { queue: 'invoices' });
        return record?.state === 'completed' ? record : undefined;
      },
      15_000,
      'the booking job to complete',
    );
    expect(job).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
    expect(await queryOnce(billing.url, 'SELECT job_id::text, n FROM public.booked')).toEqual([{ job_id: id, n: 7 }]);
    const { next } = job.output as { next: string };
    const followUp = await queryOnce(billing.url, `SELECT kind FROM awa.all_jobs WHERE id = $1`, [next]);
    expect(followUp).toEqual([{ kind: 'invoice.issue' }]);
    expect(await queryOnce(main.url, `SELECT id FROM awa.all_jobs WHERE kind LIKE 'invoice.%'`)).toEqual([]);
  });
});
