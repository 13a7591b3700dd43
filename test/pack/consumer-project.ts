import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';

export const REPO = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');
const TEMPLATE = join(REPO, 'test/pack/consumer');

/** The peers a Nest app brings itself, linked from this repo's node_modules instead of downloaded. */
const PEERS = [
  '@nestjs/common', '@nestjs/core', '@nestjs/schedule', '@nestjs/typeorm', 'typeorm', 'pg', 'reflect-metadata', 'rxjs',
  '@types/node',
];

/** This environment without npm's per-run settings (npm_config_local_prefix would point npm here) or jest's NODE_OPTIONS. */
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
  for (const built of ['dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/migrations/index.js']) {
    if (!existsSync(join(REPO, built))) throw new Error(`${built} is missing: run \`npm run build\` first (npm test does)`);
  }
  const out = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', destination], REPO);
  const [{ filename }] = JSON.parse(out) as Array<{ filename: string }>;
  return join(destination, filename);
}

/**
 * A copy of the consumer template in `dir`, with the tarball installed by npm and the peers linked
 * in beside it. Its one dependency, @types/pg, comes from npm's cache when `npm ci` left it there,
 * else from the registry (on a fresh machine npm has the tarball cached but not the registry's
 * metadata that resolving `@types/pg@^8` needs, so --offline would fail there).
 */
export async function createConsumer(dir: string, tarball: string): Promise<void> {
  await cp(TEMPLATE, dir, { recursive: true });
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts', '--legacy-peer-deps', tarball], dir);
  for (const peer of PEERS) {
    const target = join(REPO, 'node_modules', peer);
    if (!existsSync(target)) throw new Error(`${target} is missing: run npm ci`);
    const link = join(dir, 'node_modules', peer);
    if (existsSync(link)) continue; // installed with the tarball's own dependencies
    await mkdir(dirname(link), { recursive: true });
    await symlink(target, link, 'dir');
  }
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
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => {
      resolve({ code, signal });
      this.waiters.forEach((w) => w());
    }));
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
        else if (this.child.exitCode !== null || this.child.signalCode !== null) done(new Error(`exited before a line matching ${pattern}`));
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
