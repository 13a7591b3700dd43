import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { DataSource } from 'typeorm';

const SERVER_SCRIPT = new URL('./embedded-postgres.main.js', import.meta.url).pathname;

/**
 * Where the sample's data lives: DATABASE_URL when set, else an embedded PostgreSQL (free port,
 * temporary data directory) that lives as long as the app and is stopped when it shuts down.
 */
@Injectable()
export class SampleDatabase implements OnApplicationShutdown {
  private readonly logger = new Logger('SampleDatabase');
  private server: ChildProcess | undefined;

  constructor(private readonly moduleRef: ModuleRef) {}

  async url(): Promise<string> {
    if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
    this.logger.log('DATABASE_URL is not set: starting an embedded PostgreSQL');
    // detached: a process group of its own, out of reach of the terminal's Ctrl-C.
    const server = spawn(process.execPath, [SERVER_SCRIPT], { detached: true, stdio: ['pipe', 'pipe', 'inherit'] });
    this.server = server;
    const ready = new Promise<string[]>((resolve, reject) => {
      createInterface({ input: server.stdout! }).on('line', (line) => {
        if (line.startsWith('READY ')) resolve(line.split(' ').slice(1));
      });
      server.once('exit', (code) => reject(new Error(`the embedded PostgreSQL did not start (exit code ${code})`)));
    });
    const [port, directory] = await ready;
    this.logger.log(`embedded PostgreSQL on port ${port}, data in ${directory} (removed when the app stops)`);
    return `postgres://postgres:postgres@127.0.0.1:${port}/postgres`;
  }

  /** Runs once the jobs have drained (AwaModule stops in beforeApplicationShutdown). */
  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server || server.exitCode !== null || server.signalCode !== null) return;
    // Nest runs this hook before TypeOrmModule's own (which then finds the DataSource closed):
    // close the pool first, so no connection sees the server go away.
    const dataSource = this.moduleRef.get(DataSource, { strict: false });
    if (dataSource.isInitialized) await dataSource.destroy();
    const exited = once(server, 'exit');
    server.stdin!.end(); // the server process stops PostgreSQL and exits
    await exited;
  }
}
