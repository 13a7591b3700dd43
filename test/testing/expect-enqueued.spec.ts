import { Injectable } from '@nestjs/common';
import { AwaErrorCodes, AwaOptionError, JobHandler, QueueProducer } from 'nestjs-awa';
import { AwaAssertionError, AwaTesting } from 'nestjs-awa/testing';
import { caught } from '../support/caught.js';
import { useManualApp } from './testing-app.js';

@Injectable()
class Handlers {
  @JobHandler('invoice.send', { queue: 'billing' })
  async send() {}
}

describe('AwaTesting.expectEnqueued and enqueuedJobs', () => {
  const block = useManualApp([Handlers], { queues: { billing: {} } });
  let producer: QueueProducer;
  let testing: AwaTesting;

  beforeAll(async () => {
    producer = block.app.get(QueueProducer);
    testing = block.app.get(AwaTesting);
    await producer.enqueue('invoice.send', { customer: { id: 7, tier: 'gold' }, lines: [1, 2, 3] });
    await producer.enqueue('invoice.send', { customer: { id: 8, tier: 'basic' }, lines: [] });
    await producer.enqueue('report.build', { month: '2026-11' }, { runAt: new Date(Date.now() + 3_600_000) });
  });
  it('returns the enqueued jobs of a kind whose args contain the given partial args', async () => {
    const found = await testing.expectEnqueued('invoice.send', { customer: { tier: 'gold' }, lines: [2] });
    expect(found.map((j) => j.args)).toEqual([{ customer: { id: 7, tier: 'gold' }, lines: [1, 2, 3] }]);
    expect(found[0]).toMatchObject({ kind: 'invoice.send', queue: 'billing', state: 'available' });
    expect(await testing.expectEnqueued('invoice.send')).toHaveLength(2);
    expect(await testing.expectEnqueued('report.build', undefined, { queue: 'default' })).toHaveLength(1);
  });

  it('throws an AwaAssertionError that lists what was enqueued', async () => {
    const error = await caught(() => testing.expectEnqueued('invoice.send', { customer: { tier: 'platinum' } }));
    expect(error).toBeInstanceOf(AwaAssertionError);
    expect(error).toMatchObject({ code: AwaErrorCodes.assertion });
    const message = (error as Error).message;
    expect(message).toContain(
      'expected a job of kind "invoice.send" with args containing {"customer":{"tier":"platinum"}}',
    );
    // Args as stored (jsonb orders keys by length, then bytes).
    expect(message).toContain('invoice.send (billing, available) {"lines":[1,2,3],"customer":{"id":7,"tier":"gold"}}');
    expect(message).toContain('report.build (default, scheduled) {"month":"2026-11"}');
  });

  it('says so when nothing at all is enqueued in the filtered queue', async () => {
    const error = await caught(() => testing.expectEnqueued('invoice.send', undefined, { queue: 'empty' }));
    expect((error as Error).message).toContain('no job is enqueued');
  });

  it('filters enqueued jobs by kind, queue, args and state', async () => {
    expect((await testing.enqueuedJobs()).map((j) => j.kind)).toEqual(['invoice.send', 'invoice.send', 'report.build']);
    expect(await testing.enqueuedJobs({ queue: 'billing', args: { customer: { id: 8 } } })).toHaveLength(1);
    expect(await testing.enqueuedJobs({ kind: 'report.build', states: ['available'] })).toEqual([]);
  });

  it('refuses a bad filter with an AwaOptionError before the database is touched', async () => {
    expect(await caught(() => testing.enqueuedJobs({ kind: 5 as unknown as string }))).toMatchObject({ path: 'kind' });
    expect(await caught(() => testing.enqueuedJobs({ args: { n: 1n } }))).toBeInstanceOf(AwaOptionError);
    expect(await caught(() => testing.enqueuedJobs({ kinds: 'x' } as object))).toMatchObject({ path: 'kinds' });
  });
});
