import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint, type MetricData } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';

/** A reader that exports nothing on its own: the test (or the bench) collects when it wants. */
class OnDemandReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

export interface OtelSdk {
  /** The metrics as of now (cumulative), by name. */
  collect(): Promise<Map<string, MetricData>>;
  /** The spans ended so far. */
  spans(): ReadableSpan[];
  /** Unregisters the global providers and shuts them down. */
  shutdown(): Promise<void>;
}

/** Registers the real OTel SDK globally: a MeterProvider and a BasicTracerProvider with in-memory exporters. */
export function registerOtelSdk(): OtelSdk {
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
  return {
    async collect() {
      const { resourceMetrics } = await reader.collect();
      const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
      return new Map(all.map((m) => [m.descriptor.name, m]));
    },
    spans: () => exporter.getFinishedSpans(),
    async shutdown() {
      metrics.disable();
      trace.disable();
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
}

/** The data points of a metric whose attributes include `match`. */
export function pointsOf(metric: MetricData | undefined, match: Record<string, unknown> = {}): DataPoint<unknown>[] {
  const points = (metric?.dataPoints ?? []) as DataPoint<unknown>[];
  return points.filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v));
}

/** The sum of a counter's (or a gauge's) points whose attributes include `match`. */
export function sumOf(metric: MetricData | undefined, match: Record<string, unknown> = {}): number {
  return pointsOf(metric, match).reduce((total, p) => total + (p.value as number), 0);
}

/** How many values a histogram recorded under attributes that include `match`. */
export function histogramCount(metric: MetricData | undefined, match: Record<string, unknown> = {}): number {
  return pointsOf(metric, match).reduce((total, p) => total + (p.value as { count: number }).count, 0);
}
