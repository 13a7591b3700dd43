import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { AwaModuleOptions } from 'nestjs-awa';
import { sleep } from './bench.progress.js';

const SCRIPT = new URL('../worker-app.js', import.meta.url).pathname; // build/bench/worker-app.js

/** A worker instance in its own process (bench/worker-app.ts). */
export class BenchWorkerProcess {
  /** Jobs this process reports handled. */
  handled = 0;
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private readonly ready: Promise<void>;
  private stderr = '';

  constructor(url: string, options: AwaModuleOptions) {
    if (!existsSync(SCRIPT)) throw new Error(`${SCRIPT} is missing: run \`npm run build:apps\` (npm run bench does)`);
    this.child = spawn(process.execPath, [SCRIPT], {
      env: { ...process.env, NODE_OPTIONS: '', BENCH_URL: url, BENCH_AWA_OPTIONS: JSON.stringify(options) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
    this.ready = new Promise((resolve, reject) => {
      createInterface({ input: this.child.stdout! }).on('line', (line) => {
        if (line.startsWith('READY ')) resolve();
        else if (line.startsWith('HANDLED ')) this.handled = Number(line.slice(8));
      });
      void this.exited.then((code) =>
        reject(new Error(`worker process exited (${code}) before READY: ${this.stderr.trim()}`)),
      );
    });
    this.child.stderr!.on('data', (d) => (this.stderr += String(d)));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  whenReady(timeoutMs: number): Promise<void> {
    return Promise.race([
      this.ready,
      sleep(timeoutMs).then(() => {
        throw new Error(`worker process not READY within ${timeoutMs} ms: ${this.stderr.trim()}`);
      }),
    ]);
  }

  /** SIGTERM (graceful close), then SIGKILL if it has not exited within `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const code = await Promise.race([this.exited, sleep(graceMs).then(() => 'timeout' as const)]);
    if (code === 'timeout') {
      this.child.kill('SIGKILL');
      await this.exited;
    }
  }
}
