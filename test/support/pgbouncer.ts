import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { freePort } from './embedded-server.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Where Debian's `pgbouncer` package puts the binary (.ci/run installs it when missing). */
export const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';

/** Why the PgBouncer tests cannot run here, or undefined when they can. */
export function pgbouncerMissing(): string | undefined {
  return existsSync(PGBOUNCER_BIN) ? undefined : `${PGBOUNCER_BIN} is missing (apt-get install -y pgbouncer)`;
}

/**
 * A real PgBouncer in transaction mode, in front of the PostgreSQL at `serverUrl`, on a free port.
 * It runs in the foreground (not daemonized) so stop() can end it; as root it drops to `nobody`,
 * since PgBouncer refuses to run as root.
 */
export class PgBouncer {
  private constructor(
    readonly port: number,
    private readonly dir: string,
    private readonly child: ChildProcess,
    private readonly exited: Promise<unknown>,
    private readonly output: () => string,
  ) {}

  /** `url` (a database on the server behind) as seen through the pooler. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  static async start(serverUrl: string): Promise<PgBouncer> {
    const server = new URL(serverUrl);
    const user = decodeURIComponent(server.username || 'postgres');
    const password = decodeURIComponent(server.password);
    const port = await freePort();
    const root = process.getuid?.() === 0;
    // As root it runs as `nobody`, who must reach its files: not under a private TMPDIR.
    const dir = await mkdtemp(join(root && existsSync('/tmp') ? '/tmp' : tmpdir(), 'awa-pgbouncer-'));
    await chmod(dir, 0o755); // readable by `nobody`
    const quote = (s: string) => `"${s.replace(/"/g, '""')}"`;
    await writeFile(join(dir, 'userlist.txt'), `${quote(user)} ${quote(password)}\n`, { mode: 0o644 });
    const backend = [`host=${server.hostname}`, `port=${server.port || 5432}`, `user=${user}`]
      .concat(password ? [`password=${password}`] : [])
      .join(' ');
    await writeFile(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `* = ${backend}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'userlist.txt')}`,
        'pool_mode = transaction',
        'max_client_conn = 500',
        'default_pool_size = 20',
        'ignore_startup_parameters = extra_float_digits',
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
    const args = [join(dir, 'pgbouncer.ini')];
    if (root) args.unshift('-u', 'nobody');
    const child = spawn(PGBOUNCER_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (d) => (output += String(d)));
    child.stderr!.on('data', (d) => (output += String(d)));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    const bouncer = new PgBouncer(port, dir, child, exited, () => output);
    await bouncer.waitUntilAccepting(serverUrl);
    return bouncer;
  }

  private async waitUntilAccepting(serverUrl: string): Promise<void> {
    const until = Date.now() + 15_000;
    for (;;) {
      if (this.child.exitCode !== null) throw new Error(`pgbouncer exited (${this.child.exitCode}):\n${this.output()}`);
      const client = new pg.Client({ connectionString: this.urlFor(serverUrl) });
      client.on('error', () => undefined);
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch (error) {
        await client.end().catch(() => undefined);
        if (Date.now() > until)
          throw new Error(`pgbouncer did not accept connections: ${String(error)}\n${this.output()}`, { cause: error });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** SIGTERM: immediate shutdown, then the temp dir goes. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await this.exited;
    await rm(this.dir, { recursive: true, force: true });
  }
}
