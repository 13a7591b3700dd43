import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { freePort } from '../support/embedded-server.js';

const SCRIPT = new URL('../../build/sample/main.js', import.meta.url).pathname;

/** The built sample app (sample/main.ts) in a process of its own, as `npm run sample` runs it. */
export class SampleProcess {
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;
  private exitedYet = false;

  /** `env`: added to this process's environment; an undefined value removes the variable. */
  constructor(
    readonly baseUrl: string,
    env: Record<string, string | undefined>,
  ) {
    if (!existsSync(SCRIPT))
      throw new Error(`${SCRIPT} is missing: run \`npm run build && npm run build:apps\` (npm test does)`);
    const merged: Record<string, string | undefined> = { ...process.env, NODE_OPTIONS: '', NO_COLOR: '1', ...env };
    this.child = spawn(process.execPath, [SCRIPT], {
      env: Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined)),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // a process group of its own, like a shell job: see interrupt()
    });
    this.child.stdout!.on('data', (d) => (this.output += String(d)));
    this.child.stderr!.on('data', (d) => (this.output += String(d)));
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code, signal) => {
        this.exitedYet = true;
        resolve({ code, signal });
      }),
    );
  }

  static async start(env: Record<string, string | undefined>): Promise<SampleProcess> {
    const port = await freePort();
    const app = new SampleProcess(`http://127.0.0.1:${port}`, { ...env, PORT: String(port) });
    await app.listening();
    return app;
  }

  /** Resolves once the app answers HTTP; fails at once if it exits first. */
  async listening(timeoutMs = 60_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      if (this.exitedYet) throw new Error(`the sample exited before listening:\n${this.output}`);
      const answered = await fetch(`${this.baseUrl}/jobs/0`).then(
        () => true,
        () => false,
      );
      if (answered) return;
      if (Date.now() > until) throw new Error(`the sample did not listen within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  kill(signal: NodeJS.Signals): void {
    if (!this.exitedYet) this.child.kill(signal);
  }

  /** What Ctrl-C in a terminal does: SIGINT to every process of the job's process group. */
  interrupt(): void {
    if (!this.exitedYet) process.kill(-this.child.pid!, 'SIGINT');
  }
}
