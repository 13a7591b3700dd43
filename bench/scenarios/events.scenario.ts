import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { OnJobEvent } from 'nestjs-awa';
import { DEFAULT_PROFILES, profileLabel, type QueueProfile } from '../support/bench.config.js';
import { adminQuery } from '../support/bench.database.js';
import type { DrainRun } from '../support/bench.repeat.js';
import { drainInProcess, processLabel, recordCpu, recordDrains } from './process.scenario.js';
import type { Scenario } from './scenario.js';

/** The headline profile (c=24, prefetch 500), as process-long. */
const PROFILE: QueueProfile = DEFAULT_PROFILES[0]!;

/** One durable-event group subscribed to every completion (docs/durable-events.md). */
@Injectable()
class BenchEventGroup {
  delivered = 0;

  @OnJobEvent('completed', { group: 'bench' })
  completed(): void {
    this.delivered++;
  }
}

@Module({})
class BenchEventsModule {}

const WITH_GROUP: DynamicModule = { module: BenchEventsModule, providers: [BenchEventGroup] };

/**
 * The cost of durable job events: the headline drain of N no-op jobs with one group subscribed to
 * `completed` (so every completion batch also writes N events), beside the plain drain (no group:
 * the event insert stops at its one-time filter) of the same sitting, repeat by repeat. The run is
 * `ok` only if N events were stored.
 */
export const eventsScenario: Scenario = {
  id: 'events',
  title: `events: ${profileLabel(PROFILE)}, one durable-event group on every completion vs none`,
  run: async (ctx) => {
    const plain: DrainRun[] = [];
    const subscribed: DrainRun[] = [];
    for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
      for (const group of [false, true]) {
        const db = await ctx.database();
        try {
          ctx.log(`  ${group ? 'one subscribed group' : 'no group'}: drain`);
          const run = await drainInProcess(ctx, db, PROFILE, group ? [WITH_GROUP] : []);
          const [{ events } = { events: 0 }] = await adminQuery<{ events: number }>(
            db.url,
            `SELECT count(*)::int AS events FROM awa.job_events WHERE event = 'completed'`,
          );
          run.config.events_stored = events;
          run.ok &&= events === (group ? ctx.config.n : 0);
          (group ? subscribed : plain).push(run);
        } finally {
          await db.drop();
        }
      }
    }
    const label = processLabel(PROFILE);
    const plainValue = recordDrains(ctx, `${label}, no durable-event group`, plain);
    const groupLabel = `${label}, one durable-event group subscribed to completed`;
    const groupValue = recordDrains(ctx, groupLabel, subscribed);
    recordCpu(ctx, groupLabel, subscribed);
    if (plainValue && groupValue)
      ctx.log(`  with one subscribed group the drain runs at ${Math.round((groupValue / plainValue) * 100)}% of plain`);
  },
};
