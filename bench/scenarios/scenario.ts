import type { BenchConfig } from '../support/bench.config.js';
import type { BenchDatabase } from '../support/bench.database.js';
import type { Figure } from '../support/bench.report.js';

/** What a scenario gets from the runner. */
export interface ScenarioContext {
  config: BenchConfig;
  /** Creates this scenario's fresh database; the runner drops it when the scenario ends. */
  database(): Promise<BenchDatabase>;
  /** Registers a cleanup, run (last first) when the scenario ends, fails or times out. */
  defer(cleanup: () => unknown): void;
  /** Records a figure of this scenario. */
  figure(figure: Omit<Figure, 'scenario'>): void;
  /** Figures recorded so far by every scenario (for ratios between runs). */
  readonly figures: readonly Figure[];
  log(line: string): void;
  /** True once the runner has given up on this scenario: long loops should stop. */
  readonly abandoned: boolean;
}

export interface Scenario {
  id: string;
  title: string;
  /** Its own bound, in ms, instead of BENCH_SCENARIO_TIMEOUT_MS (for long runs such as the soak). */
  timeoutMs?: number;
  run(ctx: ScenarioContext): Promise<void>;
}
