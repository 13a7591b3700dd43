import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AwaRegistry } from '../awa.registry.js';
import { AwaDatabase } from '../database/awa-database.js';
import { AwaEvents } from '../events/awa-events.js';
import { JobEventGroups } from '../events/job-event-groups.service.js';
import { MaintenanceService } from '../maintenance/maintenance.service.js';
import { loadOtelApi, meterProviderRegistered, tracerProviderRegistered } from './otel-api.js';
import { startMetrics } from './telemetry.metrics.js';
import { AWA_TELEMETRY_OPTIONS, type ResolvedTelemetryOptions } from './telemetry.options.js';
import { startTracing } from './telemetry.tracing.js';
import { AwaTelemetryMessages } from './telemetry.messages.js';

/**
 * @internal Subscribes the OTel metrics and traces to the core's events at module init (before the
 * workers start, at bootstrap), and unsubscribes them on destroy. A signal whose SDK provider is not
 * registered by then is not started at all: no listener, no wrapped handler, so it costs nothing.
 */
@Injectable()
export class AwaTelemetry implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('AwaTelemetryModule');
  private stops: Array<() => void> = [];
  /** What runs: an option that is on, with its SDK provider registered at boot. */
  readonly active = { metrics: false, traces: false };

  constructor(
    private readonly registry: AwaRegistry,
    @Inject(AWA_TELEMETRY_OPTIONS) private readonly options: ResolvedTelemetryOptions,
  ) {}

  async onModuleInit(): Promise<void> {
    if (!this.options.metrics && !this.options.traces) return;
    const api = await loadOtelApi();
    this.active.metrics = this.options.metrics && meterProviderRegistered(api);
    this.active.traces = this.options.traces && tracerProviderRegistered(api);
    const missing = [
      ...(this.options.metrics && !this.active.metrics ? ['MeterProvider'] : []),
      ...(this.options.traces && !this.active.traces ? ['TracerProvider'] : []),
    ];
    if (missing.length > 0) this.logger.log(AwaTelemetryMessages.noSdk(missing));
    // Every AwaModule of the app: their queues are distinct, and a named one's leader gauge says its module.
    for (const module of this.registry.modules) {
      const events = module.get(AwaEvents);
      const maintenance = module.get(MaintenanceService);
      const gauges = {
        db: module.get(AwaDatabase),
        isLeader: () => maintenance.isLeader,
        attributes: module.name === undefined ? undefined : { module: module.name },
        eventGroups: () => module.get(JobEventGroups).localGroups(),
      };
      if (this.active.metrics) this.stops.push(startMetrics(api, events, gauges));
      if (this.active.traces) this.stops.push(startTracing(api, events));
    }
  }

  onModuleDestroy(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}
