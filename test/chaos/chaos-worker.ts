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
  JobTransactionError,
  OnJobEvent,
  QueueProducer,
  type Job,
  type JobEvent,
  type RateLimitOptions,
} from 'nestjs-awa';
import { randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';
import {
  CHAOS_KINDS,
  CHAOS_STEP_KINDS,
  chaosAwaOptions,
  COUNTED_ERROR,
  DEFAULT_RATE_LIMIT,
  ENV,
  FLAKY_ERROR,
  STEP_FAIL_ERROR,
  type ChaosArgs,
  type ChaosStepArgs,
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
  async work(job: Job<ChaosArgs | ChaosStepArgs>) {
    await sleep(job.args.ms);
    await this.record(job);
  }

  /** The record of a finished run, inside the job.transaction that completes the job. */
  async recordIn(manager: EntityManager, job: Job<ChaosArgs>) {
    await manager.query(`INSERT INTO chaos.runs (job_id, attempt, run_lease, pid, token) VALUES ($1, $2, $3, $4, $5)`, [
      job.id,
      job.attempt,
      job.runLease,
      process.pid,
      randomUUID(),
    ]);
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
  async record(job: Job<ChaosArgs | ChaosStepArgs>) {
    const token = randomUUID();
    await this.retried('the run', () =>
      this.pool.query(
        `INSERT INTO chaos.runs (job_id, attempt, run_lease, pid, token)
         SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM chaos.runs WHERE token = $5)`,
        [job.id, job.attempt, job.runLease, process.pid, token],
      ),
    );
  }

  /** Records a durable event the `chaos` group handled, as record() does a run (its token: one row per delivery). */
  async delivered(event: JobEvent) {
    const token = randomUUID();
    await this.retried('the event', () =>
      this.pool.query(
        `INSERT INTO chaos.event_deliveries (event_id, job_id, event, pid, token)
         SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS (SELECT 1 FROM chaos.event_deliveries WHERE token = $5)`,
        [event.id, event.jobId, event.event, process.pid, token],
      ),
    );
  }

  private async retried(what: string, write: () => Promise<unknown>) {
    const giveUpAt = Date.now() + 15_000;
    for (;;) {
      try {
        await write();
        return;
      } catch (error) {
        if (Date.now() > giveUpAt)
          throw new Error(`chaos: could not record ${what}: ${String(error)}`, { cause: error });
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

  /**
   * Exactly once under every fault: the counter, its note and the run's record commit with the
   * completion or not at all. A refused transaction (lease lost) throws on as it is (its failure is
   * fenced out); any other rollback (a fault) fails the attempt with the one documented text.
   */
  @JobHandler(CHAOS_KINDS.counted.kind, { queue: CHAOS_KINDS.counted.queue })
  async counted(job: Job<ChaosArgs>) {
    await sleep(job.args.ms);
    try {
      await job.transaction(async (manager) => {
        await manager.query('UPDATE chaos.counter SET n = n + 1 WHERE id = 1');
        await manager.query('INSERT INTO chaos.counted (job_id, run_lease) VALUES ($1, $2)', [job.id, job.runLease]);
        await this.runs.recordIn(manager, job);
      });
    } catch (error) {
      if (error instanceof JobTransactionError) throw error;
      throw COUNTED_ERROR;
    }
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

/** The workflow load's steps (chaosGraph): a step works like a quick job; a failing one always throws. */
@Injectable()
class StepHandlers {
  constructor(private readonly runs: RunRecorder) {}

  @JobHandler(CHAOS_STEP_KINDS.step.kind, { queue: CHAOS_STEP_KINDS.step.queue })
  async step(job: Job<ChaosStepArgs>) {
    await this.runs.work(job);
  }

  @JobHandler(CHAOS_STEP_KINDS.failing.kind, { queue: CHAOS_STEP_KINDS.failing.queue })
  async failing(job: Job<ChaosStepArgs>) {
    await sleep(job.args.ms);
    throw STEP_FAIL_ERROR;
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
  const handlers = [
    RunRecorder,
    ChaosHandlers,
    StepHandlers,
    ChaosEventGroup,
    ...(variant.keyedB ? [KeyedBHandler] : []),
  ];
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
