import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import {
  AWA_CANCEL_CHANNEL,
  AWA_CONTROL_CHANNEL,
  AWA_HANDOFF_CHANNEL,
  AWA_JOBS_CHANNEL,
} from '../../lib/awa.constants.js';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { statement } from '../../lib/sql/sql-statement.js';
import { finishedJob } from '../support/job-waits.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

@Injectable()
class PingHandler {
  @JobHandler('listen.ping') ping() {}
}

const listeningChannels = statement<[], { channel: string }>(
  'test_listening_channels',
  `SELECT pg_listening_channels() AS channel ORDER BY 1`,
);

/** What an instance's session LISTENs on decides which of the other instances' writes wake its backend and its process. */
describe('the instance session LISTENs for the workers only where there are workers', () => {
  let db: TestDatabase;
  let worker: TestingModule;
  let producerOnly: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    worker = await startTestApp({ url: db.url, providers: [PingHandler] });
    producerOnly = await startTestApp({ url: db.url });
  });
  afterAll(async () => {
    await producerOnly?.close();
    await worker?.close();
    await db?.drop();
  });

  const channelsOf = async (app: TestingModule) =>
    (await app.get(InstanceSession, { strict: false }).query(listeningChannels)).map((r) => r.channel);

  it('an instance with handlers LISTENs for new jobs, cancel requests, resumed queues and jobs handed to it', async () => {
    expect(await channelsOf(worker)).toEqual(
      [AWA_CANCEL_CHANNEL, AWA_CONTROL_CHANNEL, AWA_HANDOFF_CHANNEL, AWA_JOBS_CHANNEL].sort(),
    );
  });

  it('an instance without handlers LISTENs on nothing, and what it enqueues still runs on the instance that has the handler', async () => {
    expect(await channelsOf(producerOnly)).toEqual([]);
    const producer = producerOnly.get(QueueProducer);
    const job = await producer.enqueue('listen.ping', {});
    expect((await finishedJob(producer, job.id)).state).toBe('completed');
  });
});
