import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { DataPointType, type Histogram } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { JobHandler, MaintenanceService, QueueProducer, type Job, type JobState } from 'nestjs-awa';
import { AwaTelemetryModule } from 'nestjs-awa/telemetry';
import { DataSource } from 'typeorm';
import { AwaEvents } from '../../lib/events/awa-events.js';
import { AwaTelemetry } from '../../lib/telemetry/awa-telemetry.service.js';
import { AwaMetricNames as N } from '../../lib/telemetry/telemetry.metrics.js';
import { seedRunning } from '../support/job-factory.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';
import { histogramCount, pointsOf, registerOtelSdk, sumOf, type OtelSdk } from './otel-sdk.js';

@Injectable()
class TelemetryHandlers {
  @JobHandler('tel.ok') ok() {}

  @JobHandler('tel.flaky') flaky(job: Job) {
    if (job.attempt === 1) throw new Error('flaky on its first attempt');
  }

  @JobHandler('tel.bad') bad() {
    throw new Error('always bad');
  }

  /** Never settles: its attempt ends at the queue's hard deadline. */
  @JobHandler('tel.hang', { queue: 'hang' }) hang() {
    return new Promise(() => undefined);
  }

  /** Runs until cancelled. */
  @JobHandler('tel.wait') wait(job: Job) {
    return new Promise((resolve) => job.signal.addEventListener('abort', resolve));
  }
}

/** The real OTel SDK (in-memory exporters) registered globally, and a real app running jobs. */
describe('AwaTelemetryModule with an OTel SDK registered', () => {
  let db: TestDatabase;
  let sdk: OtelSdk;
  let app: TestingModule;
  let producer: QueueProducer;
  const ids = {} as Record<
    'ok' | 'flaky' | 'bad' | 'wait' | 'later' | 'unhandled' | 'dropped' | 'hang' | 'lost',
    string
  >;
  const exec = (text: string, values?: unknown[]) => app.get(DataSource).query(text, values);
  const stateOf = async (id: string) => (await producer.getJob(id))?.state;
  const until = (id: string, state: JobState) => waitFor(async () => (await stateOf(id)) === state, 15_000, state);

  beforeAll(async () => {
    db = await createTestDatabase();
    sdk = registerOtelSdk();
    app = await startTestApp({
      url: db.url,
      providers: [TelemetryHandlers],
      imports: [AwaTelemetryModule.forRoot() as never],
      awa: {
        queues: {
          default: { pollInterval: 200, retryBaseDelay: 50, retryMaxDelay: 200 },
          hang: { pollInterval: 200, deadlineDuration: 300 },
        },
      },
    });
    producer = app.get(QueueProducer);

    ids.ok = (await producer.enqueue('tel.ok', {})).id;
    ids.flaky = (await producer.enqueue('tel.flaky', {})).id;
    ids.bad = (await producer.enqueue('tel.bad', {}, { maxAttempts: 1 })).id;
    ids.wait = (await producer.enqueue('tel.wait', {})).id;
    ids.later = (await producer.enqueue('tel.later', {}, { runAt: new Date(Date.now() + 3_600_000) })).id;
    ids.unhandled = (await producer.enqueue('tel.none', {})).id;
    ids.dropped = (await producer.enqueue('tel.dropped', {}, { runAt: new Date(Date.now() + 3_600_000) })).id;
    expect(await producer.cancel(ids.dropped)).toMatchObject({ outcome: 'cancelled' });
    // A lease whose worker stopped heartbeating a minute ago: the leader's heartbeat rescue takes it.
    ids.hang = (await producer.enqueue('tel.hang', {}, { maxAttempts: 1 })).id;
    ids.lost = (await seedRunning(exec, { kind: 'tel.lost', instanceId: 'gone', heartbeatAgeMs: 60_000 })).id;

    await until(ids.ok, 'completed');
    await until(ids.flaky, 'completed');
    await until(ids.bad, 'failed');
    await until(ids.hang, 'failed');
    await until(ids.wait, 'running');
    expect(await producer.cancel(ids.wait)).toMatchObject({ outcome: 'signalled' });
    await until(ids.wait, 'cancelled');
    await waitFor(async () => (await stateOf(ids.lost)) !== 'running', 15_000, 'the rescue');
  });
  afterAll(async () => {
    await app?.close();
    await sdk?.shutdown();
    await db?.drop();
  });

  it('uses the SDK registered before boot: metrics and traces on, both observing the core', () => {
    expect(app.get(AwaTelemetry).active).toEqual({ metrics: true, traces: true });
    expect(app.get(AwaEvents).observed).toBe(true);
  });

  describe('metrics', () => {
    it('counts enqueued, started, completed, failed, retried, cancelled and rescued jobs', async () => {
      const m = await sdk.collect();
      const at = (kind: string, more: Record<string, unknown> = {}) => ({ queue: 'default', kind, ...more });
      expect(sumOf(m.get(N.enqueued), at('tel.ok'))).toBe(1);
      expect(sumOf(m.get(N.enqueued), at('tel.later'))).toBe(1);
      expect(sumOf(m.get(N.started), at('tel.flaky'))).toBe(2);
      expect(sumOf(m.get(N.completed), at('tel.ok'))).toBe(1);
      expect(sumOf(m.get(N.completed), at('tel.flaky'))).toBe(1);
      expect(sumOf(m.get(N.failed), at('tel.flaky', { outcome: 'retryable' }))).toBe(1);
      expect(sumOf(m.get(N.retried), at('tel.flaky'))).toBe(1);
      expect(sumOf(m.get(N.failed), at('tel.bad', { outcome: 'failed' }))).toBe(1);
      expect(sumOf(m.get(N.retried), at('tel.bad'))).toBe(0);
      // The hung handler's attempt ends at its deadline: failed by its worker, or (if the leader's deadline
      // sweep got there first) rescued with reason deadline. Counted once either way.
      const hang = { queue: 'hang', kind: 'tel.hang', outcome: 'failed' };
      expect(sumOf(m.get(N.failed), hang) + sumOf(m.get(N.rescued), { ...hang, reason: 'deadline' })).toBe(1);
      expect(sumOf(m.get(N.cancelled), at('tel.wait'))).toBe(1);
      expect(sumOf(m.get(N.cancelled), at('tel.dropped'))).toBe(1);
      expect(sumOf(m.get(N.rescued), at('tel.lost', { reason: 'heartbeat', outcome: 'retryable' }))).toBe(1);
      expect(m.get(N.completed)?.descriptor.unit).toBe('{job}');
      // Counted here, added to the SDK in bulk as it collects: a monotonic sum, as any Counter.
      expect(m.get(N.completed)).toMatchObject({ dataPointType: DataPointType.SUM, isMonotonic: true });
    });

    it('records duration by outcome, wait from run_at to start, claim batch sizes, heartbeat ticks', async () => {
      await waitFor(async () => histogramCount((await sdk.collect()).get(N.heartbeat)) > 0, 15_000, 'a heartbeat');
      const m = await sdk.collect();
      expect(histogramCount(m.get(N.duration), { kind: 'tel.ok', outcome: 'completed' })).toBe(1);
      expect(histogramCount(m.get(N.duration), { kind: 'tel.flaky', outcome: 'retryable' })).toBe(1);
      expect(histogramCount(m.get(N.duration), { kind: 'tel.bad', outcome: 'failed' })).toBe(1);
      expect(histogramCount(m.get(N.duration), { kind: 'tel.wait', outcome: 'cancelled' })).toBe(1);
      expect(histogramCount(m.get(N.wait), { queue: 'default', kind: 'tel.flaky' })).toBe(2);
      expect(m.get(N.duration)?.descriptor.unit).toBe('s');
      // Buckets in seconds, not the SDK's default ones made for milliseconds.
      const [point] = pointsOf(m.get(N.duration), { kind: 'tel.ok' });
      expect((point?.value as Histogram).buckets.boundaries.slice(0, 3)).toEqual([0.005, 0.01, 0.025]);
      // Every started job came through a claim: the batch sizes add up to at least the starts.
      for (const queue of ['default', 'hang']) {
        const claimed = pointsOf(m.get(N.claimBatch), { queue });
        const claimedJobs = claimed.reduce((total, p) => total + (p.value as Histogram).sum!, 0);
        expect(claimedJobs).toBeGreaterThanOrEqual(sumOf(m.get(N.started), { queue }));
      }
      expect(m.get(N.heartbeat)?.descriptor.unit).toBe('s');
    });

    it('has the leader report queue depth by state, the oldest available age, and itself as leader', async () => {
      await waitFor(() => app.get(MaintenanceService).isLeader, 15_000, 'leadership');
      const m = await sdk.collect();
      expect(sumOf(m.get(N.leader))).toBe(1);
      expect(sumOf(m.get(N.depth), { queue: 'default', state: 'scheduled' })).toBe(1);
      expect(sumOf(m.get(N.depth), { queue: 'default', state: 'available' })).toBeGreaterThanOrEqual(1);
      const oldest = sumOf(m.get(N.oldestAvailable), { queue: 'default' });
      expect(oldest).toBeGreaterThanOrEqual(0);
      expect(m.get(N.oldestAvailable)?.dataPoints).toHaveLength(1);
    });

    it("has the leader report each durable-event group's lag in events and seconds", async () => {
      await exec(
        `INSERT INTO awa.event_subscriptions ("group", event, kind, kind_like) VALUES ('lagging', 'completed', 'no.such', 'no.such');
         INSERT INTO awa.event_group_positions ("group", position_tx) VALUES ('lagging', '0');
         INSERT INTO awa.job_events (job_id, event, kind, queue, state, attempt, at)
         VALUES (1, 'completed', 'no.such', 'default', 'completed', 1, now() - interval '1 minute')`,
      );
      await waitFor(() => app.get(MaintenanceService).isLeader, 15_000, 'leadership');
      const m = await sdk.collect();
      expect(sumOf(m.get(N.eventGroupLag), { group: 'lagging' })).toBe(1);
      expect(sumOf(m.get(N.eventGroupLagAge), { group: 'lagging' })).toBeGreaterThanOrEqual(59);
    });
  });

  describe('traces', () => {
    const consumerSpans = (id: string) =>
      sdk
        .spans()
        .filter((s) => s.kind === SpanKind.CONSUMER && s.attributes['messaging.message.id'] === id)
        .sort((a, b) => Number(a.attributes['awa.job.attempt']) - Number(b.attributes['awa.job.attempt']));
    const producerSpanOf = async (id: string): Promise<ReadableSpan> => {
      const [row] = await exec('SELECT traceparent FROM awa.all_jobs WHERE id = $1', [id]);
      const [, traceId, spanId] = String(row.traceparent).split('-');
      const span = sdk.spans().find((s) => s.spanContext().spanId === spanId);
      expect(span?.spanContext().traceId).toBe(traceId);
      return span!;
    };

    it('records a producer span per enqueue and stores its W3C traceparent with the job', async () => {
      const span = await producerSpanOf(ids.ok);
      expect(span.kind).toBe(SpanKind.PRODUCER);
      expect(span.name).toBe('send default');
      expect(span.attributes).toMatchObject({
        'messaging.system': 'awa',
        'messaging.operation.type': 'send',
        'messaging.destination.name': 'default',
        'awa.job.kind': 'tel.ok',
      });
    });

    it("runs each attempt in a consumer span in the producer span's trace, linked to it", async () => {
      const producerSpan = await producerSpanOf(ids.flaky);
      const attempts = consumerSpans(ids.flaky);
      expect(attempts).toHaveLength(2);
      for (const [i, span] of attempts.entries()) {
        expect(span.name).toBe('process default');
        expect(span.spanContext().traceId).toBe(producerSpan.spanContext().traceId);
        expect(span.parentSpanContext?.spanId).toBe(producerSpan.spanContext().spanId);
        expect(span.links.map((l) => l.context.spanId)).toEqual([producerSpan.spanContext().spanId]);
        expect(span.attributes).toMatchObject({
          'messaging.system': 'awa',
          'messaging.operation.type': 'process',
          'messaging.destination.name': 'default',
          'awa.job.kind': 'tel.flaky',
          'awa.job.attempt': i + 1,
        });
      }
      // The first attempt threw: its error is on its span; the retry succeeded.
      expect(attempts[0]!.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'flaky on its first attempt' });
      expect(attempts[0]!.events.map((e) => e.name)).toEqual(['exception']);
      expect(attempts[1]!.status.code).toBe(SpanStatusCode.UNSET);
    });

    it('ends the span of a handler still running at its hard deadline, with the error', async () => {
      await waitFor(() => consumerSpans(ids.hang).length === 1, 15_000, 'the span of the hung handler');
      const [span] = consumerSpans(ids.hang);
      expect(span?.name).toBe('process hang');
      expect(span?.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'hard deadline exceeded' });
      // 'lease_lost' when the leader's deadline sweep rescued the attempt before its worker wrote it.
      expect(['failed', 'lease_lost']).toContain(span?.attributes['awa.job.state']);
    });

    it('records the error of a job that fails for good on its consumer span', async () => {
      const [span] = consumerSpans(ids.bad);
      expect(span?.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'always bad' });
      expect(span?.events[0]?.attributes?.['exception.message']).toBe('always bad');
    });
  });
});
