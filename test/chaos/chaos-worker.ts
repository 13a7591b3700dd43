// One process of the chaos run, built by `npm run build:apps` and spawned by run-chaos.ts.
// It uses the built package ('nestjs-awa' resolves to dist/), exactly as an app would.
// CHAOS_ROLE=worker: handlers for every chaos kind (but keyedB on one slot, see workerVariant). CHAOS_ROLE=producer: no handlers; enqueues the
// jobs with QueueProducer at a steady rate. Prints READY <pid>, and the producer PRODUCED <n> and
// PRODUCED_ALL <n>; Nest's own log lines (warn and up, plus leader changes) go to stdout as well.
import 'reflect-metadata';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  AwaModule,
  JOB_EVENT_NAMES,
  JobHandler,
  OnJobEvent,
  QueueProducer,
  type Job,
  type JobEvent,
  type RateLimitOptions,
} from 'nestjs-awa';
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import {
  CHAOS_KINDS,
  chaosAwaOptions,
  DEFAULT_RATE_LIMIT,
  ENV,
  FLAKY_ERROR,
  type ChaosArgs,
  type WorkerVariant,
} from './chaos-config.js';
import { recordStart } from './chaos-starts.js';
import { produceAll } from './chaos-producer.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The DataSource's pg Pool: `driver.master` in TypeORM 0.3 and 1.x. */
function pgPoolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as unknown as { master: Pool }).master;
}

/** This process's slot variant (see workerVariant); the producer's is unused. */
const VARIANT: WorkerVariant = JSON.parse(process.env[ENV.variant] ?? '{"keyedB":true,"ratedPrefetch":0}');

const say = (line: string) => process.stdout.write(`${line}\n`);

/** Does the handlers' work and records finished runs in the side table (chaos.runs). */
@Injectable()
class RunRecorder {
  /** The app's own pool: the public API does not expose the queue's database layer. */
  private readonly pool: Pool;

  constructor(dataSource: DataSource) {
    this.pool = pgPoolOf(dataSource);
  }

  /** A handler's work: its args' run time, then the record of the finished run. */
  async work(job: Job<ChaosArgs>) {
    await sleep(job.args.ms);
    await this.record(job);
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
  async record(job: Job<ChaosArgs>) {
    await this.insert(
      `INSERT INTO chaos.runs (job_id, attempt, run_lease, pid, token)
       SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM chaos.runs WHERE token = $5)`,
      [job.id, job.attempt, job.runLease, process.pid],
    );
  }

  /** Records a durable event the `chaos` group handled, as record() does a run. */
  async delivered(event: JobEvent) {
    await this.insert(
      `INSERT INTO chaos.event_deliveries (event_id, job_id, event, pid, token)
       SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM chaos.event_deliveries WHERE token = $5)`,
      [event.id, event.jobId, event.event, process.pid],
    );
  }

  /** Runs `sql` with `values` and a fresh token ($last), retrying through a restart (see record). */
  private async insert(sql: string, values: unknown[]) {
    const token = randomUUID();
    const giveUpAt = Date.now() + 15_000;
    for (;;) {
      try {
        await this.pool.query(sql, [...values, token]);
        return;
      } catch (error) {
        if (Date.now() > giveUpAt)
          throw new Error(`chaos: could not record the run: ${String(error)}`, { cause: error });
        await sleep(100);
      }
    }
  }
}

@Injectable()
class ChaosHandlers {
  constructor(private readonly runs: RunRecorder) {}

  @JobHandler(CHAOS_KINDS.quick.kind, { queue: CHAOS_KINDS.quick.queue })
  async quick(job: Job<ChaosArgs>) {
    await this.runs.work(job);
  }

  @JobHandler(CHAOS_KINDS.flaky.kind, { queue: CHAOS_KINDS.flaky.queue })
  async flaky(job: Job<ChaosArgs>) {
    await sleep(job.args.ms);
    if (job.attempt === 1) throw FLAKY_ERROR;
    await this.runs.record(job);
  }

  /** Ignores its signal on purpose: a slow handler that does not cooperate must still be fenced. */
  @JobHandler(CHAOS_KINDS.slow.kind, { queue: CHAOS_KINDS.slow.queue })
  async slow(job: Job<ChaosArgs>) {
    await this.runs.work(job);
  }

  /** Never settles: every attempt ends at the hard deadline, and the job fails once they are spent. */
  @JobHandler(CHAOS_KINDS.hang.kind, { queue: CHAOS_KINDS.hang.queue })
  hang(): Promise<never> {
    return new Promise<never>(() => undefined);
  }

  @JobHandler(CHAOS_KINDS.keyedA.kind, { queue: CHAOS_KINDS.keyedA.queue })
  async keyedA(job: Job<ChaosArgs>) {
    await this.runs.work(job);
  }

  /** Its start, at handler entry, is what the rate limit promises to bound (chaos-starts.ts). */
  @JobHandler(CHAOS_KINDS.rated.kind, { queue: CHAOS_KINDS.rated.queue })
  async rated(job: Job<ChaosArgs>) {
    recordStart(process.env[ENV.startsDir]!, job.id, job.runLease, VARIANT.ratedPrefetch);
    await this.runs.work(job);
  }
}

/** The durable-event group of the run: every event of every job, recorded (checked by chaos-invariants.ts). */
@Injectable()
class ChaosEventGroup {
  constructor(private readonly runs: RunRecorder) {}

  @OnJobEvent([...JOB_EVENT_NAMES], { group: 'chaos' })
  async handle(event: JobEvent) {
    await this.runs.delivered(event);
  }
}

/** Not on every worker: the slot without it is a second service sharing the keyed queue. */
@Injectable()
class KeyedBHandler {
  constructor(private readonly runs: RunRecorder) {}

  @JobHandler(CHAOS_KINDS.keyedB.kind, { queue: CHAOS_KINDS.keyedB.queue })
  async keyedB(job: Job<ChaosArgs>) {
    await this.runs.work(job);
  }
}

function appModule(role: string): DynamicModule {
  const variant = VARIANT;
  const rateLimit: RateLimitOptions = process.env[ENV.rateLimit]
    ? JSON.parse(process.env[ENV.rateLimit]!)
    : DEFAULT_RATE_LIMIT;
  const handlers = [RunRecorder, ChaosHandlers, ChaosEventGroup, ...(variant.keyedB ? [KeyedBHandler] : [])];
  return {
    module: ChaosAppModule,
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: process.env[ENV.url], autoLoadEntities: true, logging: false }),
      ScheduleModule.forRoot(),
      AwaModule.forRoot(chaosAwaOptions(rateLimit, variant.ratedPrefetch)),
    ],
    providers: role === 'producer' ? [] : handlers,
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
