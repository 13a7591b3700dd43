import * as api from '@opentelemetry/api';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { meterProviderRegistered, tracerProviderRegistered } from '../../lib/telemetry/otel-api.js';

/** How AwaTelemetryModule tells, at boot, whether an SDK is there: with the real API and SDK. */
describe('OTel SDK detection', () => {
  afterEach(() => {
    api.metrics.disable();
    api.trace.disable();
  });

  it('finds neither provider when no SDK is registered', () => {
    expect(meterProviderRegistered(api)).toBe(false);
    expect(tracerProviderRegistered(api)).toBe(false);
  });

  it('finds a MeterProvider alone, and a TracerProvider alone', () => {
    api.metrics.setGlobalMeterProvider(new MeterProvider());
    expect([meterProviderRegistered(api), tracerProviderRegistered(api)]).toEqual([true, false]);
    api.metrics.disable();
    api.trace.setGlobalTracerProvider(new BasicTracerProvider());
    expect([meterProviderRegistered(api), tracerProviderRegistered(api)]).toEqual([false, true]);
  });

  it('finds none again once the SDK is unregistered', () => {
    api.metrics.setGlobalMeterProvider(new MeterProvider());
    api.trace.setGlobalTracerProvider(new BasicTracerProvider());
    api.metrics.disable();
    api.trace.disable();
    expect([meterProviderRegistered(api), tracerProviderRegistered(api)]).toEqual([false, false]);
  });
});
