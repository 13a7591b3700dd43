import { metrics, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';

/** Collected when asked (once, at the end): what an exporter's reader costs between exports is the SDK's. */
class OnDemandReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** Counts the spans a BatchSpanProcessor hands over, and drops them (an exporter with no network). */
class CountingExporter implements SpanExporter {
  exported = 0;
  export(spans: ReadableSpan[], done: (result: { code: number }) => void): void {
    this.exported += spans.length;
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

export interface BenchOtel {
  /** awa.job.completed summed over its points: proves the metrics were on. */
  completedCounted(): Promise<number>;
  /** Flushes and returns the spans exported. */
  spansExported(): Promise<number>;
  shutdown(): Promise<void>;
}

/** Registers the OTel SDK globally, as an app with metrics and traces on would: a MeterProvider and batched spans. */
export function registerBenchOtel(): BenchOtel {
  const reader = new OnDemandReader();
  const meterProvider = new MeterProvider({ readers: [reader] });
  const exporter = new CountingExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] });
  metrics.setGlobalMeterProvider(meterProvider);
  trace.setGlobalTracerProvider(tracerProvider);
  return {
    async completedCounted() {
      const { resourceMetrics } = await reader.collect();
      const metric = resourceMetrics.scopeMetrics
        .flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === 'awa.job.completed');
      return (metric?.dataPoints ?? []).reduce((total, p) => total + (p.value as number), 0);
    },
    async spansExported() {
      await tracerProvider.forceFlush();
      return exporter.exported;
    },
    async shutdown() {
      metrics.disable();
      trace.disable();
      await Promise.all([meterProvider.shutdown(), tracerProvider.shutdown()]);
    },
  };
}
