import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { createTestDatabase, type TestDatabase } from './support/test-database.js';
import { startTestApp, waitFor } from './support/test-app.js';

@Injectable()
class Greeter {
  seen: string[] = [];
  @JobHandler('greet')
  async greet(job: Job<{ name: string }>) {
    this.seen.push(job.args.name);
  }
}

describe('basic flow', () => {
  let db: TestDatabase;
  let app: TestingModule;
  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url, providers: [Greeter] });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('enqueues and completes a job', async () => {
    const producer = app.get(QueueProducer);
    const { id } = await producer.enqueue('greet', { name: 'ada' });
    const job = await waitFor(async () => {
      const j = await producer.getJob(id);
      return j?.state === 'completed' ? j : null;
    });
    expect(job.attempt).toBe(1);
    expect(app.get(Greeter).seen).toEqual(['ada']);
  });
});
