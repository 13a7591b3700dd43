import { Inject, Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { AwaDatabase } from '../database/awa-database.js';
import { AwaEvents } from '../events/awa-events.js';
import { MaintenanceService } from '../maintenance/maintenance.service.js';
import { loadOtelApi } from './otel-api.js';
import { startMetrics } from './telemetry.metrics.js';
import { AWA_TELEMETRY_OPTIONS, type ResolvedTelemetryOptions } from './telemetry.options.js';
import { startTracing } from './telemetry.tracing.js';

/**
 * @internal Subscribes the OTel metrics and traces to the core's events at module init (before the
 * workers start, at bootstrap), and unsubscribes them on destroy.
 */
@Injectable()
export class AwaTelemetry implements OnModuleInit, OnModuleDestroy {
  private stops: Array<() => void> = [];

  constructor(
    private readonly events: AwaEvents,
    private readonly db: AwaDatabase,
    private readonly maintenance: MaintenanceService,
    @Inject(AWA_TELEMETRY_OPTIONS) private readonly options: ResolvedTelemetryOptions,
  ) {}

  async onModuleInit(): Promise<void> {
    if (!this.options.metrics && !this.options.traces) return;
    const api = await loadOtelApi();
    if (this.options.metrics)
      this.stops.push(startMetrics(api, this.events, { db: this.db, isLeader: () => this.maintenance.isLeader }));
    if (this.options.traces) this.stops.push(startTracing(api, this.events));
  }

  onModuleDestroy(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}
