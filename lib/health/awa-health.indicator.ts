import { Injectable } from '@nestjs/common';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import { AwaRegistry } from '../awa.registry.js';
import { AwaStatus, type AwaStatusSnapshot } from '../awa.status.js';

/**
 * A @nestjs/terminus health indicator for this instance of the queue. Up when the schema was
 * verified at boot, the database answers (the instance session is connected; behind a transaction
 * pooler, the last probe on the instance's own connection was answered), every claim loop ticked
 * within 3 × its pollInterval + 2 s, and the app is not shutting down. A database gone silent turns
 * it down within probeInterval + probeTimeout (orphanSweepInterval / 2, at least 1.1 s: 2.5 s by
 * default), in either mode and with or without queues. Down otherwise; either way the details name the instance, whether it leads
 * maintenance, its queues, and (when down) the problems. With several AwaModules it is up when every
 * module is: the details are the default module's, with each named module's under `modules`, and
 * each problem of a named module starts with its name.
 */
@Injectable()
export class AwaHealthIndicator {
  /** @internal Nest builds it (import AwaHealthModule). */
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly registry: AwaRegistry,
  ) {}

  async isHealthy<const Key extends string = 'awa'>(key: Key = 'awa' as Key): Promise<HealthIndicatorResult<Key>> {
    const { healthy, problems, ...details } = this.snapshot();
    const check = this.indicators.check(key);
    return healthy ? check.up(details) : check.down({ ...details, problems });
  }

  private snapshot(): AwaStatusSnapshot {
    const [first, ...others] = this.registry.modules.map((m) => ({
      name: m.name,
      status: m.get(AwaStatus).snapshot(),
    }));
    if (!first) throw new Error('nestjs-awa: AwaHealthModule needs AwaModule');
    if (others.length === 0) return first.status;
    const all = [first, ...others];
    const main = all.find((m) => m.name === undefined) ?? first;
    const modules: Record<string, AwaStatusSnapshot> = {};
    for (const m of all) if (m !== main) modules[m.name!] = m.status;
    const problems = all.flatMap((m) => m.status.problems.map((p) => (m === main ? p : `${m.name}: ${p}`)));
    return { ...main.status, healthy: all.every((m) => m.status.healthy), problems, modules };
  }
}
