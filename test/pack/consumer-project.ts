import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import semver from 'semver';
import { cachedDependencies, copyDependencies } from './consumer-deps.js';

export const REPO = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');
/** The consumer apps, each with its own package.json and package-lock.json. */
export const CONSUMERS = join(REPO, 'test/pack/consumers');

/**
 * This environment without npm's per-run settings (npm_config_local_prefix would point npm here) or jest's
 * NODE_OPTIONS.
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^npm_/i.test(key) && key !== 'NODE_OPTIONS') env[key] = value;
  }
  return { ...env, ...extra };
}

/** Runs a command to completion; rejects with its output when it fails. */
export function run(file: string, args: string[], cwd: string, env = cleanEnv()): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed (${error.code}):\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

/** `npm pack` of the already built dist/ (no prepack: other test files may be using dist/). */
export async function packTarball(destination: string): Promise<string> {
  for (const built of [
    'dist/lib/index.js',
    'dist/lib/index.d.ts',
    'dist/migrations/index.js',
    'dist/cjs/lib/index.js',
    'dist/cjs/package.json',
  ]) {
    if (!existsSync(join(REPO, built)))
      throw new Error(`${built} is missing: run \`npm run build\` first (npm test does)`);
  }
  const out = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', destination], REPO);
  const [{ filename }] = JSON.parse(out) as [{ filename: string }];
  return join(destination, filename);
}

/**
 * A copy of the consumer app `name` in `dir`: its dependencies from the npm ci cache (see
 * consumer-deps.ts), then the tarball installed on top by npm, as a user would. No
 * --legacy-peer-deps: npm fails here if the package's peer ranges reject the app's Nest or TypeORM.
 * The package's own `engines` must accept the Node running this test (.ci/run runs it on every
 * supported line), so `engines` cannot drift from what is tested. Not npm's --engine-strict: that
 * checks every package of the app too, and Nest 12's own tree (file-type) declares Node >= 22.
 */
export async function createConsumer(name: string, dir: string, tarball: string): Promise<void> {
  const { engines } = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { engines: { node: string } };
  if (!semver.satisfies(process.versions.node, engines.node))
    throw new Error(`engines.node (${engines.node}) does not accept the Node running this test, ${process.version}`);
  const template = join(CONSUMERS, name);
  const cached = await cachedDependencies(template, name, cleanEnv());
  await cp(template, dir, { recursive: true });
  await copyDependencies(cached, dir, cleanEnv());
  await run(
    'npm',
    ['install', '--no-save', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball],
    dir,
  );
}

/** The repo's own TypeScript compiler, on a project. */
export function tsc(args: string[], cwd: string): Promise<string> {
  return run(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), ...args], cwd);
}

/** A consumer program in a process of its own; collects its stdout lines. */
export class ConsumerProcess {
  readonly lines: string[] = [];
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private waiters: Array<() => void> = [];

  constructor(script: string, cwd: string, env: Record<string, string>) {
    this.child = spawn(process.execPath, [script], { cwd, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(line);
      this.waiters.forEach((w) => w());
    });
    this.child.stderr!.on('data', (d) => (this.stderr += String(d)));
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        resolve({ code, signal });
        this.waiters.forEach((w) => w());
      }),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Resolves with the first line matching `pattern`, seen already or still to come. */
  waitForLine(pattern: RegExp, timeoutMs = 60_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`no line matching ${pattern} within ${timeoutMs} ms`)), timeoutMs);
      const check = () => {
        const line = this.lines.find((l) => pattern.test(l));
        if (line !== undefined) done(undefined, line);
        else if (this.child.exitCode !== null || this.child.signalCode !== null)
          done(new Error(`exited before a line matching ${pattern}`));
      };
      const done = (error?: Error, line?: string) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        if (error) reject(new Error(`${error.message}; stdout:\n${this.lines.join('\n')}\nstderr:\n${this.stderr}`));
        else resolve(line!);
      };
      this.waiters.push(check);
      check();
    });
  }

  kill(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }
}
