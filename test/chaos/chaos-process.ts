import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ENV } from './chaos-config.js';

/**
 * The built worker script. Run from build/ (npm run chaos) it sits next to this file; run from the
 * sources (the Jest spec) it is under build/, which `npm test` builds first.
 */
function workerScript(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [join(here, 'chaos-worker.js'), join(here, '../../build/test/chaos/chaos-worker.js')];
  const found = candidates.find((path) => existsSync(path));
  if (!found)
    throw new Error(
      `chaos-worker.js is missing (looked at ${candidates.join(', ')}): run \`npm run build && npm run build:apps\``,
    );
  return found;
}

// eslint-disable-next-line no-control-regex -- ESC starts the colour codes this strips
const ANSI = /\u001b\[[0-9;]*m/g;
const KEEP_LINES = 400;

/** One spawned chaos process (worker or producer), with its output and how it ended. */
export class ChaosProcess {
  /** The last KEEP_LINES lines of stdout and stderr, for diagnostics. */
  readonly tail: string[] = [];
  readonly counts = { leaseLost: 0, leaderAcquired: 0, sessionLost: 0, writeRetries: 0, eventLeaseLost: 0 };
  readonly spawnedAt = Date.now();
  readyAt: number | undefined;
  exitedAt: number | undefined;
  produced = 0;
  /** The producer's jobs enqueued into the second server (--second-server). */
  secondProduced = 0;
  producedAll = false;
  /** Set before the runner kills or stops it: any other exit is a crash. */
  expectedExit = false;
  exitCode: number | null | undefined = undefined;
  exitSignal: NodeJS.Signals | null = null;
  private readonly child: ChildProcess;
  private readonly exited: Promise<void>;
  private readonly readyWaiters: Array<() => void> = [];

  constructor(
    readonly role: 'worker' | 'producer',
    url: string,
    env: Record<string, string> = {},
  ) {
    this.child = spawn(process.execPath, [workerScript()], {
      // CHAOS_WORKER_NODE_OPTIONS: e.g. an --import hook, to debug a worker crash.
      env: {
        ...process.env,
        NODE_OPTIONS: process.env.CHAOS_WORKER_NODE_OPTIONS ?? '',
        NO_COLOR: '1',
        [ENV.url]: url,
        [ENV.role]: role,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    createInterface({ input: this.child.stdout! }).on('line', (line) => this.onLine(line.replace(ANSI, '')));
    createInterface({ input: this.child.stderr! }).on('line', (line) =>
      this.keep(`[stderr] ${line.replace(ANSI, '')}`),
    );
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        this.exitedAt = Date.now();
        this.exitCode = code;
        this.exitSignal = signal;
        this.readyWaiters.splice(0).forEach((w) => w());
        resolve();
      }),
    );
  }

  get pid(): number {
    return this.child.pid!;
  }

  get alive(): boolean {
    return this.exitCode === undefined;
  }

  /** Resolves once READY was printed; rejects if the process exits first or takes too long. */
  async ready(timeoutMs = 60_000): Promise<void> {
    if (this.readyAt === undefined && this.alive) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.readyWaiters.push(resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
      clearTimeout(timer);
    }
    if (this.readyAt === undefined) {
      throw new Error(
        `chaos ${this.role} ${this.pid} did not get ready (exit ` +
          `${this.exitCode ?? this.exitSignal}):\n${this.tail.slice(-40).join('\n')}`,
      );
    }
  }

  /** The end of the process's stderr (where a crash's stack is), or else of its output. */
  diagnostics(lines = 40): string {
    const stderr = this.tail.filter((line) => line.startsWith('[stderr]'));
    return (stderr.length > 0 ? stderr : this.tail).slice(-lines).join('\n');
  }

  kill(signal: NodeJS.Signals): void {
    this.expectedExit = true;
    this.child.kill(signal);
  }

  /** Waits up to `timeoutMs` for the exit; true if it exited. */
  async exit(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
    return !this.alive;
  }

  private onLine(line: string): void {
    this.keep(line);
    if (line.startsWith('READY ')) {
      this.readyAt = Date.now();
      this.readyWaiters.splice(0).forEach((w) => w());
    } else if (line.startsWith('PRODUCED_ALL ')) {
      this.producedAll = true;
    } else if (line.startsWith('PRODUCED ')) {
      this.produced = Number(line.split(' ')[1]);
    } else if (line.startsWith('SECOND_PRODUCED ')) {
      this.secondProduced = Number(line.split(' ')[1]);
    } else if (line.includes('was no longer held')) {
      this.counts.leaseLost++;
    } else if (line.includes('is now the maintenance leader')) {
      this.counts.leaderAcquired++;
    } else if (line.includes('instance session lost')) {
      this.counts.sessionLost++;
    } else if (line.includes('writing job results (will retry)')) {
      this.counts.writeRetries++;
    } else if (line.includes('another instance took the group over')) {
      this.counts.eventLeaseLost++;
    }
  }

  private keep(line: string): void {
    // CHAOS_LOG_DIR: keep every process's whole output, one file per process, for post-mortems.
    if (process.env.CHAOS_LOG_DIR)
      appendFileSync(
        join(process.env.CHAOS_LOG_DIR, `${this.role}-${this.pid}.log`),
        `${new Date().toISOString()} ${line}\n`,
      );
    this.tail.push(line);
    if (this.tail.length > KEEP_LINES) this.tail.shift();
  }
}
