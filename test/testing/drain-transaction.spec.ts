import { Injectable } from '@nestjs/common';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { AwaTesting } from 'nestjs-awa/testing';
import { useManualApp } from './testing-app.js';

@Injectable()
class Ledger {
  constructor(private readonly producer: QueueProducer) {}

  @JobHandler('ledger.post')
  post(job: Job<{ cents: number; fail?: boolean }>) {
    return job.transaction(async (manager) => {
      await manager.query('INSERT INTO public.ledger (job_id, cents) VALUES ($1, $2)', [job.id, job.args.cents]);
      await this.producer.enqueue('ledger.notify', { posted: job.id }, { manager });
      if (job.args.fail) throw new Error('posting refused');
      return { posted: job.args.cents };
    });
  }

  @JobHandler('ledger.notify')
  notify() {}
}

/** AwaTesting.drain runs a handler's job.transaction as a worker does. */
describe('AwaTesting.drain with job.transaction', () => {
  const block = useManualApp([Ledger], { queues: { default: { maxAttempts: 1 } } });
  let dataSource: DataSource;

  beforeAll(async () => {
    dataSource = block.app.get<DataSource>(getDataSourceToken());
    await dataSource.query('CREATE TABLE public.ledger (job_id bigint NOT NULL, cents int NOT NULL)');
  });

  it("commits the handler's writes, its follow-up job and the completion; a failed callback writes nothing", async () => {
    const producer = block.app.get(QueueProducer);
    const posted = await producer.enqueue('ledger.post', { cents: 250 });
    const refused = await producer.enqueue('ledger.post', { cents: 99, fail: true });
    const result = await block.app.get(AwaTesting).drain();
    expect(result).toMatchObject({ completed: 2, failed: 1 });
    expect(await producer.getJob(posted.id)).toMatchObject({ state: 'completed', output: { posted: 250 } });
    expect(await producer.getJob(refused.id)).toMatchObject({ state: 'failed' });
    expect(await dataSource.query('SELECT job_id::text, cents FROM public.ledger')).toEqual([
      { job_id: posted.id, cents: 250 },
    ]);
    const notices = await dataSource.query(
      `SELECT args->>'posted' AS posted FROM awa.all_jobs WHERE kind = 'ledger.notify'`,
    );
    expect(notices).toEqual([{ posted: posted.id }]);
  });
});
