import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { SpanKind } from '@opentelemetry/api';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { AwaTelemetryModule } from 'nestjs-awa/telemetry';
import { AwaMetricNames as N } from '../../lib/telemetry/telemetry.metrics.js';
import { dedicatedBackends } from '../support/dedicated-connections.js';
import { handedOff } from '../support/handed-off.js';
import { finishedJob } from '../support/job-waits.js';
import { createTestDatabase, queryOnce, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';
import { histogramCount, registerOtelSdk, sumOf, type OtelSdk } from './otel-sdk.js';

@Injectable()
class HandoffTelemetryHandlers {
  @JobHandler('telh.ok') ok() {}
  @JobHandler('telh.warm-up') warmUp() {}
}

/**
 * A handed-off job (queue option handoff, durable or eager) through the real OTel SDK: traced and
 * counted as a claimed one. (Eagerly, its handler may start before enqueue() has returned.)
 */
describe.each([true, 'eager'] as const)('AwaTelemetryModule and handoff: %s', (handoff) => {
  let db: TestDatabase;
  let sdk: OtelSdk;
  let app: TestingModule;
  let producer: QueueProducer;

  beforeAll(async () => {
    db = await createTestDatabase();
    sdk = registerOtelSdk();
    app = await startTestApp({
      url: db.url,
      providers: [HandoffTelemetryHandlers],
      imports: [AwaTelemetryModule.forRoot() as never],
      awa: { queues: { default: { pollInterval: 200, handoff } } },
    });
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await sdk?.shutdown();
    await db?.drop();
  });

  const offered = () =>
    waitFor(
      async () => (await queryOnce(db.url, 'SELECT 1 FROM awa.worker_offers')).length === 1,
      15_000,
      'the worker to offer',
    );

  it("runs the handed job in a consumer span of the producer span's trace, and counts it as a claimed job", async () => {
    // The first handed enqueue opens the handoff connection (and goes through the pool); the next one uses it.
    await offered();
    await finishedJob(producer, (await producer.enqueue('telh.warm-up', {})).id);
    await waitFor(
      async () => (await dedicatedBackends(db.url, 'awa-handoffs')).length === 1,
      15_000,
      'the handoff connection',
    );
    await offered();
    const { id } = await producer.enqueue('telh.ok', {});
    const job = await finishedJob(producer, id);
    expect({ state: job.state, handed: await handedOff(db.url, id) }).toEqual({ state: 'completed', handed: true });

    const spans = () => sdk.spans().filter((s) => s.attributes['messaging.message.id'] === id);
    await waitFor(() => spans().some((s) => s.kind === SpanKind.CONSUMER), 15_000, 'the consumer span');
    // The last producer span is this enqueue's (the warm-up's ended before it began).
    const producerSpan = sdk
      .spans()
      .filter((s) => s.kind === SpanKind.PRODUCER)
      .at(-1)!;
    const consumer = spans().find((s) => s.kind === SpanKind.CONSUMER)!;
    expect(consumer.spanContext().traceId).toBe(producerSpan.spanContext().traceId);
    expect(consumer.parentSpanContext?.spanId).toBe(producerSpan.spanContext().spanId);

    const metrics = await sdk.collect();
    const at = { queue: 'default', kind: 'telh.ok' };
    expect(sumOf(metrics.get(N.enqueued), at)).toBe(1);
    expect(sumOf(metrics.get(N.started), at)).toBe(1);
    expect(sumOf(metrics.get(N.completed), at)).toBe(1);
    expect(histogramCount(metrics.get(N.duration), { ...at, outcome: 'completed' })).toBe(1);
    // The handoff connection ran the enqueue: eagerly, its last statement is the flush.
    const [backend] = await dedicatedBackends(db.url, 'awa-handoffs');
    expect(backend!.query).toContain(handoff === 'eager' ? 'awa.handoff_flush_due' : 'awa.worker_offers');
  });
});
