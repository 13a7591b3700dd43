// `npm run bench:floor`: issue 18's first goal in one command. The long drain (`process-long`) and
// the peers bench's SQL floor (`SYSTEMS=floor`, 2 connections, the same N) in alternating pairs,
// ABBA order (floor first, then ours first, ...), a CHECKPOINT before each run, on one server.
// On a shared 2-core machine one pair's ratio moves by ±10 points within minutes; the sum over
// the pairs is the figure to quote. Progress goes to stderr; stdout gets the table, then one JSON
// line per figure in the peers bench's shape.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminQuery, startBenchServer } from './support/bench.database.js';
import { MachineCpuSampler } from './support/bench.machine-cpu.js';
import { progress } from './support/bench.progress.js';
import { r2 } from './support/bench.report.js';

interface Options {
  pairs: number;
  n: number;
  peers: string;
}

interface Pair {
  floor: number;
  /** The whole machine's CPU per job over the floor's drain (Linux). */
  floorMachineUsPerJob: number | undefined;
  ours: number;
  cpuUsPerJob: number;
  /** The whole machine's CPU per job over our drain (Linux): ours, the server's, the kernel's. */
  machineUsPerJob: number | undefined;
}

/** This file's folder once built (build/bench): the bench's entry point beside it, the repository two levels up. */
const HERE = fileURLToPath(new URL('.', import.meta.url));

/** `--pairs N` (4), `--peers DIR` (the repository's ../shared/peers-bench); N from BENCH_LONG_N (200,000). */
function readOptions(argv: string[]): Options {
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const pairs = Number(value('--pairs') ?? 4);
  const n = Number(process.env.BENCH_LONG_N ?? 200_000);
  const peers = resolve(value('--peers') ?? resolve(HERE, '../../../shared/peers-bench'));
  if (!Number.isInteger(pairs) || pairs < 1)
    throw new Error(`--pairs must be a positive integer, got ${value('--pairs')}`);
  if (!Number.isInteger(n) || n < 1) throw new Error(`BENCH_LONG_N must be a positive integer, got ${n}`);
  if (!existsSync(resolve(peers, 'bench-floor.mjs')))
    throw new Error(`--peers: no bench-floor.mjs in ${peers} (the peers bench, ../shared/peers-bench)`);
  return { pairs, n, peers };
}

/** Runs a child to its end; resolves with its stdout's JSON lines (stderr is kept for a failure). */
function runChild(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<Array<Record<string, any>>> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => {
      if (code !== 0) return fail(new Error(`${command} ${args.join(' ')} exited ${code}:\n${err.slice(-2000)}`));
      done(
        out
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line) as Record<string, any>),
      );
    });
  });
}

function figure(lines: Array<Record<string, any>>, system: string, metric: string): number {
  const value = optionalFigure(lines, system, metric);
  if (value === undefined) throw new Error(`no ${system} ${metric} in the run's output`);
  return value;
}

function optionalFigure(lines: Array<Record<string, any>>, system: string, metric: string): number | undefined {
  const line = figureLine(lines, system, metric);
  return typeof line?.value === 'number' ? line.value : undefined;
}

/** The output line of `system`'s `metric`, if the run printed one. */
function figureLine(
  lines: Array<Record<string, any>>,
  system: string,
  metric: string,
): Record<string, any> | undefined {
  return lines.find((l) => l.system === system && l.metric === metric);
}

async function main(): Promise<void> {
  const options = readOptions(process.argv.slice(2));
  const server = await startBenchServer(progress);
  const admin = new URL(server.adminUrl);
  const floorEnv = {
    ...process.env,
    PGHOST: admin.hostname,
    PGPORT: admin.port || '5432',
    PGUSER: decodeURIComponent(admin.username),
    ...(admin.password ? { PGPASSWORD: decodeURIComponent(admin.password) } : {}),
    PGADMINDB: admin.pathname.slice(1) || 'postgres',
    N: String(options.n),
    FLOOR_C: '2',
    SYSTEMS: 'floor',
  };
  const oursEnv = { ...process.env, DATABASE_URL: server.adminUrl, BENCH_ONLY: 'process-long', BENCH_REPEAT: '1' };
  // bench-floor.mjs alone where the peers bench is installed; else run.sh (which installs a copy each time).
  const installed = existsSync(resolve(options.peers, 'node_modules/pg'));
  const [command, args] = installed ? [process.execPath, ['bench-floor.mjs']] : ['bash', ['run.sh']];
  const floor = async () => {
    await adminQuery(server.adminUrl, 'CHECKPOINT');
    const sampler = new MachineCpuSampler();
    const lines = await runChild(command, args, options.peers, floorEnv).finally(() => sampler.stop());
    const line = figureLine(lines, 'sql-floor', 'process_jobs_per_s');
    if (typeof line?.value !== 'number') throw new Error("no sql-floor process_jobs_per_s in the run's output");
    const jobsPerS = line.value;
    // Its line is written as its drain ends (`ts`), with the jobs done and the rate: the drain's window.
    const done = Number(line.config?.done ?? options.n);
    const end = Date.parse(String(line.ts));
    const busyUs = sampler.busyUsBetween(end - (done / jobsPerS) * 1000, end);
    return { jobsPerS, machine: busyUs === undefined ? undefined : r2(busyUs / done) };
  };
  const ours = async () => {
    await adminQuery(server.adminUrl, 'CHECKPOINT');
    const lines = await runChild(process.execPath, [resolve(HERE, 'run.js')], resolve(HERE, '../..'), oursEnv);
    return {
      jobsPerS: figure(lines, 'nestjs-awa', 'process_jobs_per_s'),
      cpu: figure(lines, 'nestjs-awa', 'process_cpu_us_per_job'),
      machine: optionalFigure(lines, 'nestjs-awa', 'process_machine_cpu_us_per_job'),
    };
  };
  const pairs: Pair[] = [];
  try {
    for (let i = 0; i < options.pairs; i++) {
      // ABBA: the floor first in pairs 1 and 4, ours first in 2 and 3, and so on.
      const floorFirst = i % 4 === 0 || i % 4 === 3;
      const floorBefore = floorFirst ? await floor() : undefined;
      const o = await ours();
      const f = floorBefore ?? (await floor());
      pairs.push({
        floor: f.jobsPerS,
        floorMachineUsPerJob: f.machine,
        ours: o.jobsPerS,
        cpuUsPerJob: o.cpu,
        machineUsPerJob: o.machine,
      });
      progress(
        `pair ${i + 1}/${options.pairs}: floor ${f.jobsPerS} jobs/s` +
          `${f.machine === undefined ? '' : ` (the machine's CPU per job ${f.machine} µs)`}, ` +
          `ours ${o.jobsPerS} jobs/s (${o.cpu} µs CPU per job` +
          `${o.machine === undefined ? '' : ` of the machine's ${o.machine}`})`,
      );
    }
  } finally {
    await server.stop();
  }
  printReport(pairs, options, server.label);
}

/** The mean of per-job figures over the pairs (each drain has the same N), blank if one is missing. */
function mean(values: Array<number | undefined>): number | string {
  const known = values.filter((v): v is number => v !== undefined);
  return known.length === values.length && known.length > 0 ? r2(known.reduce((s, v) => s + v, 0) / known.length) : '';
}

function printReport(pairs: Pair[], options: Options, serverLabel: string): void {
  const sum = (f: (p: Pair) => number) => pairs.reduce((s, p) => s + f(p), 0);
  const ratio = sum((p) => p.ours) / sum((p) => p.floor);
  const lines = [
    `nestjs-awa long drain beside the SQL floor: ${serverLabel}, node ${process.version}, N=${options.n}, ABBA order`,
    "(the machine's µs: all cores' busy CPU per job over the drain, the server's and the kernel's included; Linux)",
    '',
    "| pair | SQL floor, 2 connections (jobs/s) | the machine's µs per job | nestjs-awa process-long (jobs/s) | our process's µs CPU per job | the machine's µs per job | ours / floor |",
    '|---|---|---|---|---|---|---|',
    ...pairs.map(
      (p, i) =>
        `| ${i + 1} | ${p.floor} | ${p.floorMachineUsPerJob ?? ''} | ${p.ours} | ${p.cpuUsPerJob} | ` +
        `${p.machineUsPerJob ?? ''} | ${(100 * (p.ours / p.floor)).toFixed(1)}% |`,
    ),
    `| all | ${sum((p) => p.floor)} | ${mean(pairs.map((p) => p.floorMachineUsPerJob))} | ${sum((p) => p.ours)} | ` +
      `${mean(pairs.map((p) => p.cpuUsPerJob))} | ${mean(pairs.map((p) => p.machineUsPerJob))} | ${(100 * ratio).toFixed(1)}% |`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  const ts = new Date().toISOString();
  const config = { label: `${pairs.length} pair(s), ABBA order`, node: process.version, server: serverLabel, pairs };
  process.stdout.write(
    `${JSON.stringify({ system: 'nestjs-awa', metric: 'floor_ratio', value: r2(ratio), n: options.n, config, ts })}\n`,
  );
}

main().catch((error: unknown) => {
  progress(`bench:floor failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
