import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { AwaHealthIndicator } from './awa-health.indicator.js';

/**
 * Provides AwaHealthIndicator. Import it next to AwaModule and TerminusModule, and call
 * `indicator.isHealthy()` from your HealthCheckService.check([...]).
 */
@Module({
  imports: [TerminusModule],
  providers: [AwaHealthIndicator],
  exports: [AwaHealthIndicator],
})
export class AwaHealthModule {}
