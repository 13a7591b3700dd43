import { AwaTelemetryModule } from 'nestjs-awa';
import { profileId, profileLabel, type QueueProfile } from '../support/bench.config.js';
import { registerBenchOtel } from '../support/bench.otel.js';
import type { DrainRun } from '../support/bench.repeat.js';
import { drainInProcess, processLabel, recordDrains } from './process.scenario.js';
import type { Scenario } from './scenario.js';

type Mode = 'off' | 'no-sdk' | 'sdk';

const MODES: Record<Mode, string> = {
  off: 'no AwaTelemetryModule',
  'no-sdk': 'AwaTelemetryModule, no OTel SDK registered',
  sdk: 'AwaTelemetryModule + OTel SDK (metrics and traces, batched spans)',
};

/**
 * The cost of telemetry: the headline drain (process-<profile>) with no telemetry, with
 * AwaTelemetryModule and no SDK (everything the API's no-op), and with the SDK registered (metrics
 * and traces on). The modes take turns, repeat by repeat, so a drift of the machine hits all three.
 */
export function otelScenario(profile: QueueProfile): Scenario {
  return {
    id: `otel-${profileId(profile)}`,
    title: `otel: ${profileLabel(profile)}, ${Object.keys(MODES).join(' / ')}`,
    run: async (ctx) => {
      const runs: Record<Mode, DrainRun[]> = { off: [], 'no-sdk': [], sdk: [] };
      const checks: Record<string, number> = {};
      for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
        for (const mode of Object.keys(MODES) as Mode[]) {
          ctx.log(` ${MODES[mode]}`);
          const db = await ctx.database();
          const otel = mode === 'sdk' ? registerBenchOtel() : undefined;
          try {
            const imports = mode === 'off' ? [] : [AwaTelemetryModule.forRoot()];
            runs[mode].push(await drainInProcess(ctx, db, profile, imports));
            if (otel) {
              checks.completed_counted = await otel.completedCounted();
              checks.spans_exported = await otel.spansExported();
            }
          } finally {
            await otel?.shutdown();
            await db.drop();
          }
        }
      }
      for (const mode of Object.keys(MODES) as Mode[])
        recordDrains(ctx, `${processLabel(profile)}, ${MODES[mode]}`, runs[mode], {
          telemetry: mode,
          ...(mode === 'sdk' ? checks : {}),
        });
    },
  };
}
