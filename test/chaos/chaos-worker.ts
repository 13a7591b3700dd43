// One process of the chaos run, built by `npm run build:apps` and spawned by run-chaos.ts.
// It uses the built package ('nestjs-awa' resolves to dist/), exactly as an app would.
// CHAOS_ROLE=worker: handlers for every chaos kind (but keyedB on one slot, see workerVariant). CHAOS_ROLE=producer: no handlers; enqueues the
// jobs with QueueProducer at a steady rate. Prints READY <pid>, and the producer PRODUCED <n> and
// PRODUCED_ALL <n> (SECOND_PRODUCED <n> for the second server's jobs); with CHAOS_SECOND_URL every process
// runs a second, named AwaModule on that server too (chaos-second-app.ts). Nest's own log lines (warn and up, plus leader changes) go to stdout as well.
import 'reflect-metadata';
import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
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
import { DataSource } from 'typeorm';
import {
  CHAOS_KINDS,
  CHAOS_STEP_KINDS,
  chaosAwaOptions,
  DEFAULT_RATE_LIMIT,
  ENV,
  FLAKY_ERROR,
  SECOND_DATA_SOURCE,
  STEP_FAIL_ERROR,
  type ChaosArgs,
  type ChaosStepArgs,
  type WorkerVariant,
} from './chaos-config.js';
import { countOnce, pgPoolOf, RunRecorder } from './chaos-recorder.js';
import { SecondServerHandlers, secondServerModules } from './chaos-second-app.js';
import { recordStart } from './chaos-starts.js';
import { produceAll, produceSecond, type Sql } from './chaos-producer.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** This process's slot variant (see workerVariant); the producer's is unused. */
const VARIANT: WorkerVariant = JSON.parse(process.env[ENV.variant] ?? '{"keyedB":true,"ratedPrefetch":0}');

const say = (line: string) => process.stdout.write(`${line}\n`);

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

  /** Exactly once under every fault: see countOnce. */
  @JobHandler(CHAOS_KINDS.counted.kind, { queue: CHAOS_KINDS.counted.queue })
  async counted(job: Job<ChaosArgs>) {
    await countOnce(this.runs, job);
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
  const secondUrl = process.env[ENV.secondUrl];
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
      ...(secondUrl ? secondServerModules(secondUrl) : []),
    ],
    providers: role === 'producer' ? [] : [...handlers, ...(secondUrl ? [SecondServerHandlers] : [])],
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
    // The second server's jobs go in beside, at a pace of their own: its outage holds up only them.
    const sqlOf = (dataSource: DataSource): Sql => {
      const pool = pgPoolOf(dataSource);
      return async (text, values) => (await pool.query(text, values)).rows;
    };
    const [produced] = await Promise.all([
      produceAll(app.get(QueueProducer), sqlOf(app.get(DataSource)), say),
      process.env[ENV.secondUrl]
        ? produceSecond(app.get(QueueProducer), sqlOf(app.get(getDataSourceToken(SECOND_DATA_SOURCE))), say)
        : 0,
    ]);
    say(`PRODUCED_ALL ${produced}`);
  }
}

main().catch((error) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
