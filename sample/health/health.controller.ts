import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { AwaHealthIndicator } from 'nestjs-awa/health';

/** GET /health: 200 while the queue is healthy, 503 with the reasons otherwise. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly awa: AwaHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.awa.isHealthy()]);
  }
}
