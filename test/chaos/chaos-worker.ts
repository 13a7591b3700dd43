// One process of the chaos run, built by `npm run build:apps` and spawned by run-chaos.ts.
// It uses the built package ('nestjs-awa' resolves to dist/), exactly as an app would.
// CHAOS_ROLE=worker: handlers for every chaos kind. CHAOS_ROLE=producer: no handlers; enqueues the
// jobs with QueueProducer at a steady rate. Prints READY <pid>, and the producer PRODUCED <n> and
// PRODUCED_ALL <n>; Nest's own log lines (warn and up, plus leader changes) go to stdout as well.
import 'reflect-metadata';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { CHAOS_AWA_OPTIONS, CHAOS_KINDS, ENV, FLAKY_ERROR, type ChaosArgs } from './chaos-config.js';
import { produceAll } from './chaos-producer.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The DataSource's pg Pool: `driver.master` in TypeORM 0.3 and 1.x. */
function pgPoolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as unknown as { master: Pool }).master;
}

const say = (line: string) => process.stdout.write(`${line}\n`);

@Injectable()
class ChaosHandlers {
  /** The app's own pool: the public API does not expose the queue's database layer. */
  private readonly pool: Pool;

  constructor(dataSource: DataSource) {
    this.pool = pgPoolOf(dataSource);
  }

  @JobHandler(CHAOS_KINDS.quick.kind, { queue: CHAOS_KINDS.quick.queue })
  async quick(job: Job<ChaosArgs>) {
    await sleep(job.args.ms);
    await this.record(job);
  }

  @JobHandler(CHAOS_KINDS.flaky.kind, { queue: CHAOS_KINDS.flaky.queue })
  async flaky(job: Job<ChaosArgs>) {
    await sleep(job.args.ms);
    if (job.attempt === 1) throw FLAKY_ERROR;
    await this.record(job);
  }

  /** Ignores its signal on purpose: a slow handler that does not cooperate must still be fenced. */
  @JobHandler(CHAOS_KINDS.slow.kind, { queue: CHAOS_KINDS.slow.queue })
  async slow(job: Job<ChaosArgs>) {
    await sleep(job.args.ms);
    await this.record(job);
  }

  /** Never settles: every attempt ends at the hard deadline, and the job fails once they are spent. */
  @JobHandler(CHAOS_KINDS.hang.kind, { queue: CHAOS_KINDS.hang.queue })
  hang(): Promise<never> {
    return new Promise<never>(() => undefined);
  }

  /**
   * Records a finished run in the side table. It must survive the PostgreSQL restart, so it
   * retries; the token makes a retry after an ambiguous commit insert nothing twice, so two rows
   * for one (job, run_lease) can only mean the lease really ran twice.
   * It writes through pool.query, not dataSource.query: a TypeORM QueryRunner takes a new pool
   * client and attaches its 'error' listener one microtask later, and a server shutting down just
   * then (its FATAL arriving in the same read as ReadyForQuery) crashes the process with an
   * unhandled 'error'. That is TypeORM's gap, not the queue's; this suite tests the queue.
   */
  private async record(job: Job<ChaosArgs>) {
    const token = randomUUID();
    const giveUpAt = Date.now() + 15_000;
    for (;;) {
      try {
        await this.pool.query(
          `INSERT INTO chaos.runs (job_id, attempt, run_lease, pid, token)
           SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM chaos.runs WHERE token = $5)`,
          [job.id, job.attempt, job.runLease, process.pid, token],
        );
        return;
      } catch (error) {
        if (Date.now() > giveUpAt)
          throw new Error(`chaos: could not record the run: ${String(error)}`, { cause: error });
        await sleep(100);
      }
    }
  }
}

function appModule(role: string): DynamicModule {
  return {
    module: ChaosAppModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: process.env[ENV.url], autoLoadEntities: true, logging: false }),
      ScheduleModule.forRoot(),
      AwaModule.forRoot(CHAOS_AWA_OPTIONS),
    ],
    providers: role === 'producer' ? [] : [ChaosHandlers],
  };
}

@Module({})
class ChaosAppModule {}

async function main() {
  const role = process.env[ENV.role] ?? 'worker';
  // 'log' too: leader changes and rescue counts are logged at that level.
  const app = await NestFactory.createApplicationContext(appModule(role), { logger: ['error', 'warn', 'log'] });
  app.enableShutdownHooks();
  say(`READY ${process.pid}`);
  if (role === 'producer') {
    const pool = pgPoolOf(app.get(DataSource));
    const produced = await produceAll(
      app.get(QueueProducer),
      async (text, values) => (await pool.query(text, values)).rows,
      say,
    );
    say(`PRODUCED_ALL ${produced}`);
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
