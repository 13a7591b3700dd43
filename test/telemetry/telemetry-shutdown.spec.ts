import { Injectable } from '@nestjs/common';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { AwaTelemetryModule } from 'nestjs-awa/telemetry';
import { AwaMetricNames as N } from '../../lib/telemetry/telemetry.metrics.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';
import { registerOtelSdk, sumOf, type OtelSdk } from './otel-sdk.js';

@Injectable()
class Handlers {
  @JobHandler('stop.ok') ok() {}
}

/** Counts kept in the process until a collection must reach the SDK by the time the app has stopped. */
describe('AwaTelemetryModule metrics when the app stops before any collection', () => {
  let db: TestDatabase;
  let sdk: OtelSdk;

  beforeAll(async () => {
    db = await createTestDatabase();
    sdk = registerOtelSdk();
  });
  afterAll(async () => {
    await sdk?.shutdown();
    await db?.drop();
  });

  it("hands every count to the SDK on stop, for the SDK's last export", async () => {
    const app = await startTestApp({
      url: db.url,
      providers: [Handlers],
      imports: [AwaTelemetryModule.forRoot({ traces: false }) as never],
    });
    try {
      const producer = app.get(QueueProducer);
      const jobs = await producer.enqueueMany([1, 2, 3].map(() => ({ kind: 'stop.ok', args: {} })));
      for (const { id } of jobs)
        await waitFor(async () => (await producer.getJob(id))?.state === 'completed', 15_000, 'completion');
    } finally {
      await app.close();
    }
    const m = await sdk.collect();
    const at = { queue: 'default', kind: 'stop.ok' };
    expect([N.enqueued, N.started, N.completed].map((name) => sumOf(m.get(name), at))).toEqual([3, 3, 3]);
  });
});
