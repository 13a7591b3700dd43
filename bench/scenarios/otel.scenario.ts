import { AwaTelemetryModule } from 'nestjs-awa';
import { profileId, profileLabel, type QueueProfile } from '../support/bench.config.js';
import { registerBenchOtel } from '../support/bench.otel.js';
import type { DrainRun } from '../support/bench.repeat.js';
import { drainInProcess, processLabel, recordDrains } from './process.scenario.js';
import type { Scenario } from './scenario.js';

type Mode = 'off' | 'no-sdk' | 'metrics' | 'sdk';

const MODES: Record<Mode, string> = {
  off: 'no AwaTelemetryModule',
  'no-sdk': 'AwaTelemetryModule, no OTel SDK registered',
  metrics: 'AwaTelemetryModule({ traces: false }) + OTel SDK (metrics only)',
  sdk: 'AwaTelemetryModule + OTel SDK (metrics and traces, batched spans)',
};

/**
 * The cost of telemetry: the headline drain (process-<profile>) with no telemetry, with
 * AwaTelemetryModule and no SDK (everything the API's no-op), with the SDK registered and metrics
 * only, and with metrics and traces. The modes take turns, repeat by repeat, so a drift of the
 * machine hits them all.
 */
export function otelScenario(profile: QueueProfile): Scenario {
  return {
    id: `otel-${profileId(profile)}`,
    title: `otel: ${profileLabel(profile)}, ${Object.keys(MODES).join(' / ')}`,
    run: async (ctx) => {
      const runs: Record<Mode, DrainRun[]> = { off: [], 'no-sdk': [], metrics: [], sdk: [] };
      const checks: Record<string, number> = {};
      for (let i = 0; i < ctx.config.repeat && !ctx.abandoned; i++) {
        for (const mode of Object.keys(MODES) as Mode[]) {
          ctx.log(` ${MODES[mode]}`);
          const db = await ctx.database();
          const otel = mode === 'metrics' || mode === 'sdk' ? registerBenchOtel() : undefined;
          try {
            const imports = mode === 'off' ? [] : [AwaTelemetryModule.forRoot({ traces: mode !== 'metrics' })];
            runs[mode].push(await drainInProcess(ctx, db, profile, imports));
            if (otel) {
              checks[`${mode}_completed_counted`] = await otel.completedCounted();
              checks[`${mode}_spans_exported`] = await otel.spansExported();
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
          ...otelChecks(checks, mode),
        });
    },
  };
}

/** The checks of the last run of `mode` (jobs counted by awa.job.completed, spans exported): proof it was on. */
function otelChecks(checks: Record<string, number>, mode: Mode): Record<string, number> {
  return Object.fromEntries(Object.entries(checks).filter(([key]) => key.startsWith(`${mode}_`)));
}
