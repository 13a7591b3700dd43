import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { AwaStatus } from '../awa.status.js';

/**
 * A @nestjs/terminus health indicator for this instance of the queue. Up when the schema was
 * verified at boot, the database answers (the instance session is connected; behind a transaction
 * pooler, the last probe on the instance's own connection was answered), every claim loop ticked
 * within 3 × its pollInterval + 2 s, and the app is not shutting down. A database gone silent turns
 * it down within probeInterval + probeTimeout (orphanSweepInterval / 2, at least 1.1 s: 2.5 s by
 * default), in either mode and with or without queues. Down otherwise; either way the details name the instance, whether it leads
 * maintenance, its queues, and (when down) the problems.
 */
@Injectable()
export class AwaHealthIndicator {
  /** @internal Nest builds it (import AwaHealthModule). */
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly status: AwaStatus,
  ) {}

  async isHealthy<const Key extends string = 'awa'>(key: Key = 'awa' as Key): Promise<HealthIndicatorResult<Key>> {
    const { healthy, problems, ...details } = this.status.snapshot();
    const check = this.indicators.check(key);
    return healthy ? check.up(details) : check.down({ ...details, problems });
  }
}
