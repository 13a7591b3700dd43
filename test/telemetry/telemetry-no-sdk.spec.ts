import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AwaErrorCodes, AwaOptionError, JobHandler, QueueProducer } from 'nestjs-awa';
import { AwaTelemetryModule, type AwaTelemetryOptions } from 'nestjs-awa/telemetry';
import { DataSource } from 'typeorm';
import { metrics, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AwaEvents } from '../../lib/events/awa-events.js';
import { AwaTelemetry } from '../../lib/telemetry/awa-telemetry.service.js';
import { AWA_TELEMETRY_OPTIONS } from '../../lib/telemetry/telemetry.options.js';
import type { ObservedAttempt } from '../../lib/events/observed-attempt.js';
import { caughtSync } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class Handlers {
  handled = 0;
  @JobHandler('plain.ok') ok() {
    this.handled++;
  }
}

describe('AwaTelemetryModule without an OTel SDK', () => {
  let db: TestDatabase;
  let app: TestingModule;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({ url: db.url, providers: [Handlers], imports: [AwaTelemetryModule.forRoot() as never] });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('runs jobs, and stores no traceparent: with no tracer registered, no span is active at enqueue', async () => {
    const producer = app.get(QueueProducer);
    const { id } = await producer.enqueue('plain.ok', {});
    const [many] = await producer.enqueueMany([{ kind: 'plain.ok', args: {} }]);
    await waitFor(async () => (await producer.getJob(many!.id))?.state === 'completed', 15_000, 'completion');
    await waitFor(async () => (await producer.getJob(id))?.state === 'completed', 15_000, 'completion');
    expect(app.get(Handlers).handled).toBe(2);
    const rows = await app.get(DataSource).query('SELECT traceparent FROM awa.all_jobs ORDER BY id');
    expect(rows).toEqual([{ traceparent: null }, { traceparent: null }]);
  });

  it('starts nothing: no listener on the core, no trace hooks, the handler runs as it is', () => {
    expect(app.get(AwaTelemetry).active).toEqual({ metrics: false, traces: false });
    const events = app.get(AwaEvents);
    expect(events.observed).toBe(false);
    const invoke = () => undefined;
    expect(events.process({ observed: {} as ObservedAttempt }, invoke)).toBe(invoke);
  });
});

/** Traces alone: a TracerProvider registered before boot, no MeterProvider. */
describe('AwaTelemetryModule with only a TracerProvider registered', () => {
  let db: TestDatabase;
  let app: TestingModule;
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

  beforeAll(async () => {
    db = await createTestDatabase();
    metrics.disable();
    trace.setGlobalTracerProvider(provider);
    app = await startTestApp({ url: db.url, providers: [Handlers], imports: [AwaTelemetryModule.forRoot() as never] });
  });
  afterAll(async () => {
    await app?.close();
    trace.disable();
    await provider.shutdown();
    await db?.drop();
  });

  it('uses it: traces on, metrics off; the enqueue stores the producer span, the attempt gets its own', async () => {
    expect(app.get(AwaTelemetry).active).toEqual({ metrics: false, traces: true });
    const producer = app.get(QueueProducer);
    const { id } = await producer.enqueue('plain.ok', {});
    await waitFor(async () => (await producer.getJob(id))?.state === 'completed', 15_000, 'completion');
    const [row] = await app.get(DataSource).query('SELECT traceparent FROM awa.all_jobs WHERE id = $1', [id]);
    const [, traceId, spanId] = String(row.traceparent).split('-');
    const named = (name: string) => exporter.getFinishedSpans().find((s) => s.name === name);
    await waitFor(() => named('process default') !== undefined, 15_000, 'the consumer span');
    expect(named('send default')?.spanContext()).toMatchObject({ traceId, spanId });
    expect(named('process default')?.parentSpanContext).toMatchObject({ traceId, spanId });
  });
});

describe('AwaTelemetryModule.forRoot options', () => {
  it.each<[string, unknown, string]>([
    ['a misspelled key', { metrcs: true }, 'telemetry.metrcs'],
    ['a value that is not a boolean', { traces: 'yes' }, 'telemetry.traces'],
    ['options that are not an object', 'on', 'telemetry'],
  ])('refuses %s with an AwaOptionError naming it', (_, options, path) => {
    const error = caughtSync(() => AwaTelemetryModule.forRoot(options as AwaTelemetryOptions));
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({ code: AwaErrorCodes.invalidOption, path });
  });

  it('defaults metrics and traces to on, and switches each off on its own', () => {
    const resolved = (options?: AwaTelemetryOptions) =>
      AwaTelemetryModule.forRoot(options).providers?.find(
        (p) => typeof p === 'object' && 'provide' in p && p.provide === AWA_TELEMETRY_OPTIONS,
      );
    expect(resolved()).toMatchObject({ useValue: { metrics: true, traces: true } });
    expect(resolved({ metrics: false })).toMatchObject({ useValue: { metrics: false, traces: true } });
    expect(resolved({ traces: false })).toMatchObject({ useValue: { metrics: true, traces: false } });
  });
});
