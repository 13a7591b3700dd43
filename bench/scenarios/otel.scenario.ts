import { AwaTelemetryModule } from 'nestjs-awa/telemetry';
import { profileId, profileLabel, type QueueProfile } from '../support/bench.config.js';
import { registerBenchOtel } from '../support/bench.otel.js';
import type { DrainRun } from '../support/bench.repeat.js';
import { drainInProcess, processLabel, recordCpu, recordDrains } from './process.scenario.js';
import type { Scenario, ScenarioContext } from './scenario.js';

type Mode = 'off' | 'no-sdk' | 'metrics' | 'sdk';

/** Its own bound: 4 modes x BENCH_REPEAT drains of BENCH_OTEL_N jobs outlast BENCH_SCENARIO_TIMEOUT_MS. */
const TIMEOUT_MS = 900_000;

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
    timeoutMs: TIMEOUT_MS,
    run: async (scenarioCtx) => {
      // Drains of BENCH_OTEL_N jobs: a drain of N (20,000) lasts well under a second, too short to tell the modes apart.
      const ctx: ScenarioContext = Object.create(scenarioCtx, {
        config: { value: { ...scenarioCtx.config, n: scenarioCtx.config.otelN } },
      });
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
      for (const mode of Object.keys(MODES) as Mode[]) {
        const label = `${processLabel(profile)}, ${MODES[mode]}`;
        recordDrains(ctx, label, runs[mode], { telemetry: mode, ...otelChecks(checks, mode) });
        recordCpu(ctx, label, runs[mode], { telemetry: mode }, `${mode}: `);
      }
    },
  };
}

/** The checks of the last run of `mode` (jobs counted by awa.job.completed, spans exported): proof it was on. */
function otelChecks(checks: Record<string, number>, mode: Mode): Record<string, number> {
  return Object.fromEntries(Object.entries(checks).filter(([key]) => key.startsWith(`${mode}_`)));
}
