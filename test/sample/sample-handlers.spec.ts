import { QueueProducer } from 'nestjs-awa';
import { AwaTesting } from 'nestjs-awa/testing';
import { EmailHandler } from '../../sample/emails/email.handler.js';
import { HousekeepingHandler } from '../../sample/housekeeping/housekeeping.handler.js';
import { useManualApp } from '../testing/testing-app.js';

// The sample's handlers as its own e2e test would run them: AwaModule in manual mode (testing: true)
// and AwaTestingModule, jobs drained in the test's process with nestjs-awa/testing, against a real PostgreSQL.
describe('sample handlers, drained with nestjs-awa/testing', () => {
  const block = useManualApp([EmailHandler, HousekeepingHandler], {
    queues: { emails: { maxAttempts: 3, retryBaseDelay: 3_600_000 } },
  });
  let producer: QueueProducer;
  let testing: AwaTesting;

  beforeAll(() => {
    producer = block.app.get(QueueProducer);
    testing = block.app.get(AwaTesting);
  });

  it('sends an email, and retries one that bounces', async () => {
    await producer.enqueue('email.send', { to: 'ada@example.com', subject: 'hello' });
    await producer.enqueue('email.send', { to: 'nobody@fail.test', subject: 'bounce' });
    await testing.expectEnqueued('email.send', { to: 'ada@example.com' });

    const result = await testing.drain({ queue: 'emails' });
    expect(result.completed).toBe(1);
    expect(result.retried).toBe(1);
    expect(result.jobs.find((job) => job.state === 'retryable')?.error).toContain('nobody@fail.test');
  });

  it('stores what the housekeeping job returns as its output', async () => {
    const { id } = await producer.enqueue('housekeeping.tick', { note: 'from the test' });
    const result = await testing.drain({ kind: 'housekeeping.tick' });
    expect(result.completed).toBe(1);
    const job = await producer.getJob(id);
    expect(job?.output).toEqual({ firedAt: expect.any(String) });
  });
});
