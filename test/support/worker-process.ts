import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { AwaModuleOptions } from 'nestjs-awa';

const SCRIPT = new URL('../../build/test/fixtures/worker-app.js', import.meta.url).pathname;

/** A real worker process (test/fixtures/worker-app.ts, built by `npm run build:apps`). */
export class WorkerProcess {
  readonly lines: string[] = [];
  private readonly child: ChildProcess;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<() => void> = [];
  stderr = '';

  /** `env`: more of the process's environment (e.g. AWA_BUSY_MS, see worker-app.ts). */
  constructor(url: string, options: AwaModuleOptions, env: Record<string, string> = {}) {
    if (!existsSync(SCRIPT))
      throw new Error(`${SCRIPT} is missing: run \`npm run build && npm run build:apps\` (npm test does)`);
    this.child = spawn(process.execPath, [SCRIPT], {
      env: { ...process.env, NODE_OPTIONS: '', AWA_URL: url, AWA_OPTIONS: JSON.stringify(options), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      this.lines.push(line);
      this.waiters.forEach((w) => w());
    });
    this.child.stderr!.on('data', (d) => (this.stderr += String(d)));
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Resolves with the first line matching `pattern` (already seen or still to come). */
  waitForLine(pattern: RegExp, timeoutMs = 20_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(
          new Error(
            `no line matching ${pattern} within ${timeoutMs} ms; ` +
              `got:\n${this.lines.join('\n')}\nstderr:\n${this.stderr}`,
          ),
        );
      }, timeoutMs);
      const check = () => {
        const line = this.lines.find((l) => pattern.test(l));
        if (line === undefined) return;
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        resolve(line);
      };
      this.waiters.push(check);
      check();
    });
  }

  /** A worker boots in about a second alone, but CI runs it beside the chaos suites on two cores. */
  ready(): Promise<string> {
    return this.waitForLine(/^READY /, 45_000);
  }

  kill(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  /** Resolves once the process has exited, with its exit code or the signal that ended it. */
  exit(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }
}
