import { Module, type DynamicModule } from '@nestjs/common';
import { AwaTelemetry } from './awa-telemetry.service.js';
import { AWA_TELEMETRY_OPTIONS, resolveTelemetryOptions, type AwaTelemetryOptions } from './telemetry.options.js';

/**
 * OpenTelemetry metrics and traces for nestjs-awa, through @opentelemetry/api (an optional peer
 * dependency, loaded only when this module is imported). Import it next to AwaModule.forRoot(...).
 * Without a registered OTel SDK every instrument and span is the API's no-op.
 */
@Module({})
export class AwaTelemetryModule {
  static forRoot(options: AwaTelemetryOptions = {}): DynamicModule {
    const resolved = resolveTelemetryOptions(options); // a bad option fails here, naming it
    return {
      module: AwaTelemetryModule,
      providers: [{ provide: AWA_TELEMETRY_OPTIONS, useValue: resolved }, AwaTelemetry],
    };
  }
}
