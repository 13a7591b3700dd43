// nestjs-awa/telemetry: OpenTelemetry metrics and traces. Only this entry loads @opentelemetry/api
// (on first use); the core never imports lib/telemetry/, it only emits the events telemetry reads.
export { AwaTelemetryModule } from './awa-telemetry.module.js';
export type { AwaTelemetryOptions } from './telemetry.options.js';
