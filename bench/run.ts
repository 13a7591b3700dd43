// `npm run bench`: nestjs-awa's throughput, latency and heartbeat figures (method: bench/README.md).
// Progress goes to stderr; stdout gets a human table, then one JSON line per figure in the shape
// of ../shared/peers-bench ({system, version, metric, value, n, config, ts}).
import 'reflect-metadata';
import { cpus, loadavg, totalmem } from 'node:os';
import { bigTableScenario } from './scenarios/big-table.scenario.js';
import { dashboardScenario } from './scenarios/dashboard.scenario.js';
import { enqueueScenario } from './scenarios/enqueue.scenario.js';
import { eventsScenario } from './scenarios/events.scenario.js';
import { flowScenario } from './scenarios/flow.scenario.js';
import { heartbeatScenario } from './scenarios/heartbeat.scenario.js';
import { latencyScenario } from './scenarios/latency.scenario.js';
import { otelScenario } from './scenarios/otel.scenario.js';
import { processIoScenario } from './scenarios/process-io.scenario.js';
import { processLongScenario } from './scenarios/process-long.scenario.js';
import { processSqlScenario } from './scenarios/process-sql.scenario.js';
import { processMultiScenario } from './scenarios/process-multi.scenario.js';
import { processScenario } from './scenarios/process.scenario.js';
import { soakScenario } from './scenarios/soak.scenario.js';
import { transactionScenario } from './scenarios/transaction.scenario.js';
import { workflowScenario } from './scenarios/workflow.scenario.js';
import type { Scenario, ScenarioContext } from './scenarios/scenario.js';
import { profileLabel, readBenchConfig, type BenchConfig, type QueueProfile } from './support/bench.config.js';
import { createBenchDatabase, serverInfo, startBenchServer, type BenchServer } from './support/bench.database.js';
import { progress, sleep } from './support/bench.progress.js';
import { readSoakConfig, soakRequested } from './support/bench.soak-config.js';
import { humanTable, jsonLine, packageVersion, r2, type Figure } from './support/bench.report.js';

const CLEANUP_TIMEOUT_MS = 20_000;

function scenarios(config: BenchConfig): Scenario[] {
  // `npm run bench -- --soak [--rate N ...]`: the sustained-load run alone (minutes long).
  const argv = process.argv.slice(2);
  if (soakRequested(argv)) return [soakScenario(readSoakConfig(argv))];
  const [headline] = config.profiles as [QueueProfile, ...QueueProfile[]];
  return [
    enqueueScenario,
    ...config.profiles.map((p) => processScenario(p)),
    processLongScenario,
    processIoScenario,
    processSqlScenario,
    transactionScenario,
    eventsScenario,
    processMultiScenario(1, headline),
    processMultiScenario(2, headline),
    latencyScenario('local'),
    latencyScenario('notify'),
    latencyScenario('handoff'),
    latencyScenario('handoff-eager'),
    heartbeatScenario,
    bigTableScenario(headline),
    dashboardScenario,
    flowScenario,
    otelScenario(headline),
    workflowScenario,
  ];
}

/** Runs `body`, giving up after `ms`; what it left running is ended by the cleanups and the database drop. */
async function bounded(what: string, body: () => unknown, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.resolve().then(body),
      new Promise(
        (_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function runScenario(
  scenario: Scenario,
  config: BenchConfig,
  server: BenchServer,
  figures: Figure[],
): Promise<string | undefined> {
  const cleanups: Array<() => unknown> = [];
  const drops: Array<() => Promise<void>> = [];
  let abandoned = false;
  const ctx: ScenarioContext = {
    config,
    figures,
    get abandoned() {
      return abandoned;
    },
    database: async () => {
      const db = await createBenchDatabase(server.adminUrl, scenario.id);
      drops.push(db.drop);
      return db;
    },
    defer: (cleanup) => cleanups.push(cleanup),
    figure: (figure) => figures.push({ ...figure, scenario: scenario.id }),
    // A scenario given up on may still print from the background: say whose line it is.
    log: (line) => progress(abandoned ? `  (abandoned ${scenario.id}) ${line.trim()}` : line),
  };
  let failure: string | undefined;
  try {
    await bounded(`scenario ${scenario.id}`, () => scenario.run(ctx), scenario.timeoutMs ?? config.scenarioTimeoutMs);
  } catch (error) {
    failure = error instanceof Error ? error.message : String(error);
    progress(`  FAILED: ${error instanceof Error ? error.stack : failure}`);
  }
  abandoned = true;
  for (const cleanup of cleanups.reverse()) {
    await bounded(`cleanup of ${scenario.id}`, cleanup, CLEANUP_TIMEOUT_MS).catch((error) =>
      progress(`  cleanup: ${String(error)}`),
    );
  }
  for (const drop of drops) await drop().catch((error) => progress(`  dropping the database: ${String(error)}`));
  return failure;
}

async function main(): Promise<void> {
  const config = readBenchConfig();
  const version = packageVersion();
  const server = await startBenchServer(progress);
  const failures: Array<{ scenario: string; error: string }> = [];
  const figures: Figure[] = [];
  let env: Record<string, unknown>;
  try {
    env = {
      node: process.version,
      cpus: cpus().length,
      cpu_model: cpus()[0]?.model,
      mem_gb: Math.round(totalmem() / 2 ** 30),
      server: server.label,
      pg: await serverInfo(server.adminUrl),
      // Other work on the machine moves every figure: the 1-minute load average at start and end.
      loadavg_start: r2(loadavg()[0]!),
      bench: { ...config, only: config.only ?? 'all' },
    };
    progress(
      `nestjs-awa ${version} on ${server.label}, N=${config.n}, queue profiles ` +
        `${config.profiles.map(profileLabel).join(' | ')}`,
    );
    const selected = scenarios(config).filter((s) => !config.only || config.only.some((o) => s.id.startsWith(o)));
    for (const [i, scenario] of selected.entries()) {
      progress(`[${i + 1}/${selected.length}] ${scenario.title}`);
      const failure = await runScenario(scenario, config, server, figures);
      if (failure) failures.push({ scenario: scenario.id, error: failure });
      await sleep(500); // let the server settle between scenarios
    }
  } finally {
    await server.stop().catch((error) => progress(`stopping PostgreSQL: ${String(error)}`));
  }

  const ts = new Date();
  env.loadavg_end = r2(loadavg()[0]!);
  const out = process.stdout;
  out.write(
    `\nnestjs-awa ${version}: ${String(env.server)}, node ` +
      `${process.version}, ${String(env.cpus)} cpus, N=${config.n}, ` +
      `load average ${String(env.loadavg_start)} at start, ${String(env.loadavg_end)} at end\n\n`,
  );
  out.write(`${humanTable(figures, failures)}\n\n`);
  out.write(
    `${JSON.stringify({
      system: '_env',
      version: null,
      metric: 'env',
      value: null,
      n: null,
      config: env,
      ts: ts.toISOString(),
    })}\n`,
  );
  for (const figure of figures) out.write(`${jsonLine(version, figure, ts)}\n`);
  for (const failure of failures) {
    out.write(
      `${JSON.stringify({
        system: 'nestjs-awa',
        version,
        metric: 'error',
        value: null,
        n: null,
        config: { label: `FAILED: ${failure.scenario}`, ...failure },
        ts: ts.toISOString(),
      })}\n`,
    );
  }
}

main().then(
  () => process.exit(0), // leftover timers of abandoned scenarios must not keep the bench alive
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  },
);
