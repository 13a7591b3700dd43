import { AwaSetupError } from '../errors/awa-setup.error.js';
import { AwaTelemetryMessages } from './telemetry.messages.js';

/** @internal The @opentelemetry/api module: an optional peer, so only its type is imported statically. */
export type OtelApi = typeof import('@opentelemetry/api');

/**
 * @internal Loads @opentelemetry/api on first use, so that nestjs-awa itself never requires it.
 * `import()` stays a dynamic import in the ESM build and becomes `require` in the CommonJS one.
 */
export async function loadOtelApi(): Promise<OtelApi> {
  try {
    return await import('@opentelemetry/api');
  } catch (error) {
    throw new AwaSetupError(AwaTelemetryMessages.apiMissing(error instanceof Error ? error.message : String(error)));
  }
}

/** @internal The name of the meter and of the tracer. */
export const INSTRUMENTATION_SCOPE = 'nestjs-awa';

/**
 * @internal Whether an SDK's MeterProvider is registered: without one the API hands out its no-op
 * meter (of the class `createNoopMeter()` makes), and keeps doing so for a meter taken now.
 */
export function meterProviderRegistered(api: OtelApi): boolean {
  const meter = api.metrics.getMeter(INSTRUMENTATION_SCOPE);
  return Object.getPrototypeOf(meter) !== Object.getPrototypeOf(api.createNoopMeter());
}

/**
 * @internal Whether an SDK's TracerProvider is registered: the API's global provider is a
 * ProxyTracerProvider that has a tracer of its own only once an SDK set its delegate. Anything
 * else (another copy of the API, a future one without the proxy) counts as registered.
 */
export function tracerProviderRegistered(api: OtelApi): boolean {
  const provider = api.trace.getTracerProvider();
  const { ProxyTracerProvider } = api;
  if (typeof ProxyTracerProvider !== 'function' || !(provider instanceof ProxyTracerProvider)) return true;
  return provider.getDelegateTracer(INSTRUMENTATION_SCOPE) !== undefined;
}
