// Type-level checks only (nothing here runs): every public name imports from the installed
// package with a real type. A name whose declarations failed to resolve would be `any`, and
// `true satisfies NotAny<any>` (that is, `true satisfies false`) does not compile.
import type { MigrationInterface } from 'typeorm';
import {
  AwaActiveLeaseEntity,
  AwaEntities,
  AwaInstanceEntity,
  AwaJobEntity,
  AwaMigrations as AwaMigrationsFromIndex,
  AwaModule,
  HeartbeatService,
  JobHandler,
  MaintenanceService,
  QueueProducer,
  type AwaModuleOptions,
  type EnqueuedJob,
  type HeartbeatReport,
  type Job,
  type JobRecord,
  type JobState,
  type SweepReport,
  JobSchedules,
  JobSnoozedError,
  Periodic,
  QueueAdmin,
  RateLimitedError,
  type BulkResult,
  type JobFilter,
  type JobPage,
  type JobSnooze,
  type QueueState,
  type RateLimited,
  type RetryJobResult,
  type ScheduleRecord,
} from 'nestjs-awa';
import { AwaHealthIndicator, AwaHealthModule } from 'nestjs-awa/health';
import { AwaAssertionError, AwaTesting, AwaTestingModule, type DrainResult } from 'nestjs-awa/testing';
import { AwaTelemetryModule, type AwaTelemetryOptions } from 'nestjs-awa/telemetry';
import { AwaDashboardModule, type AwaDashboardOptions } from 'nestjs-awa/dashboard';
import type * as Awa from 'nestjs-awa';
import { AwaInit1764400000000, AwaMigrations } from 'nestjs-awa/migrations';

type NotAny<T> = 0 extends 1 & T ? false : true;
/** True when the package does not export the value `K` (internals stay out of the API). */
type NotExported<K extends string> = K extends keyof typeof Awa ? false : true;
type NotPublic<T, K extends string> = [Extract<K, keyof T>] extends [never] ? true : false;

export const checks = [
  true satisfies NotAny<typeof AwaModule>,
  true satisfies NotAny<typeof JobHandler>,
  true satisfies NotAny<QueueProducer>,
  true satisfies NotAny<HeartbeatService>,
  true satisfies NotAny<MaintenanceService>,
  true satisfies NotAny<Job>,
  true satisfies NotAny<Job<{ n: number }>['args']['n']>,
  true satisfies NotAny<AwaJobEntity>,
  true satisfies NotAny<AwaActiveLeaseEntity>,
  true satisfies NotAny<AwaInstanceEntity>,
  true satisfies NotAny<typeof AwaEntities>,
  true satisfies NotAny<typeof AwaMigrations>,
  true satisfies NotAny<AwaInit1764400000000>,
  true satisfies NotAny<SweepReport['heartbeat rescue']>,
  // Internals are not part of the API: the database layer, the options token, single migrations
  // (they live in 'nestjs-awa/migrations'), and the lifecycle's start/stop of the services.
  true satisfies NotExported<'AwaDatabase'>,
  true satisfies NotExported<'AWA_OPTIONS'>,
  true satisfies NotExported<'AwaInit1764400000000'>,
  // Optional parts are entry points of their own: telemetry lives in 'nestjs-awa/telemetry', the
  // dashboard in 'nestjs-awa/dashboard'.
  true satisfies NotExported<'AwaTelemetryModule'>,
  true satisfies NotAny<typeof AwaTelemetryModule>,
  true satisfies NotAny<AwaTelemetryOptions['metrics']>,
  true satisfies NotExported<'AwaDashboardModule'>,
  true satisfies NotAny<typeof AwaDashboardModule>,
  true satisfies NotAny<AwaDashboardOptions['readOnly']>,
  true satisfies NotPublic<MaintenanceService, 'stop' | 'start'>,
  true satisfies NotPublic<HeartbeatService, 'stop' | 'start'>,
];

// The types say what users rely on.
export const migrations: ReadonlyArray<new () => MigrationInterface> = [...AwaMigrations, ...AwaMigrationsFromIndex];
export const firstMigration: MigrationInterface = new AwaInit1764400000000();
export const options: AwaModuleOptions = {
  queues: { pack: { concurrency: 2, deadlineDuration: 60_000 } },
  migrationsRun: false,
};
export const dynamicModule: { module: unknown } = AwaModule.forRoot(options);
export const entityClasses: Function[] = [...AwaEntities, AwaJobEntity, AwaActiveLeaseEntity, AwaInstanceEntity];

export async function usesTheProducer(producer: QueueProducer): Promise<JobState | undefined> {
  const one: EnqueuedJob = await producer.enqueue(
    'pack.work',
    { ms: 1 },
    { queue: 'pack', priority: 1, runAt: new Date() },
  );
  const many: EnqueuedJob[] = await producer.enqueueMany([{ kind: 'pack.work', args: { ms: 1 } }]);
  const record: JobRecord<{ ms: number }> | null = await producer.getJob<{ ms: number }>(many[0]?.id ?? one.id);
  const ms: number | undefined = record?.args.ms;
  return ms === undefined ? undefined : record?.state;
}

export async function usesTheServices(maintenance: MaintenanceService, heartbeat: HeartbeatService): Promise<number> {
  const leader: boolean = maintenance.isLeader;
  const report: HeartbeatReport | undefined = await heartbeat.tick();
  return leader ? (report?.refreshed ?? 0) : 0;
}

export async function readsASweep(maintenance: MaintenanceService): Promise<number> {
  const report: SweepReport | undefined = await maintenance.sweep();
  return report ? report['heartbeat rescue'] + report['deadline rescue'] + report.promotion + report.cleanup : 0;
}

export function readsAJob(job: Job<{ ms: number }>): string {
  const id: string = job.id;
  const attempt: number = job.attempt;
  const signal: AbortSignal = job.signal;
  const ms: number = job.args.ms;
  return `${id} ${attempt} ${signal.aborted} ${ms} ${job.kind} ${job.queue} ${job.maxAttempts}`;
}

export function readsTheEntity(row: AwaJobEntity<{ ms: number }>): JobState {
  const ms: number = row.args.ms;
  return ms >= 0 ? row.state : 'failed';
}

// The lifecycle, flow control and operations API (issues 8, 9 and 10).
export async function usesTheLifecycle(
  producer: QueueProducer,
  admin: QueueAdmin,
  schedules: JobSchedules,
  testing: AwaTesting,
): Promise<number> {
  const unique: EnqueuedJob = await producer.enqueue(
    'pack.work',
    { ms: 1 },
    { unique: { byArgs: true, period: 60_000 }, tags: ['pack'], concurrencyKey: 'tenant-1' },
  );
  const duplicate: boolean = unique.duplicate;
  await admin.pauseQueue('pack');
  await admin.resumeQueue('pack');
  const states: QueueState[] = await admin.queueStates();
  const filter: JobFilter = { states: ['failed'], tags: ['pack'], args: { ms: 1 } };
  const page: JobPage = await admin.listJobs(filter, { limit: 10 });
  const retried: BulkResult = await admin.retryJobs(filter);
  const one: RetryJobResult = await admin.retryJob(unique.id);
  const listed: ScheduleRecord[] = await schedules.listSchedules();
  const drained: DrainResult = await testing.drain({ queue: 'pack' });
  return (
    (duplicate ? 1 : 0) +
    states.length +
    page.jobs.length +
    retried.count +
    listed.length +
    drained.completed +
    (one.outcome === 'retried' ? 1 : 0)
  );
}

export function handlesLifecycle(job: Job<{ ms: number }>): JobSnooze | RateLimited | { ms: number } {
  job.progress({ done: 0.5 });
  if (job.args.ms > 1000) return job.snooze(1000);
  if (job.args.ms > 500) return job.rateLimit(500);
  return { ms: job.args.ms };
}

export const operationsModules: unknown[] = [
  AwaDashboardModule.forRoot({ path: '/awa', readOnly: true }),
  AwaTelemetryModule.forRoot({ metrics: true, traces: true }),
  AwaHealthModule,
];
export const lifecycleOptions: AwaModuleOptions = {
  schedules: [{ name: 'pack.nightly', cron: '0 3 * * *', kind: 'pack.work', timeZone: 'Europe/Berlin' }],
  queues: { limited: { rateLimit: { limit: 100, period: 1000 }, keyConcurrency: 5, maxSnoozes: 10 } },
};
export const healthCheck = (indicator: AwaHealthIndicator) => indicator.isHealthy('awa');
export const errorClasses: Function[] = [JobSnoozedError, RateLimitedError, AwaAssertionError];
export const periodicDecorator: MethodDecorator = Periodic('*/5 * * * * *');

// The test helpers are an entry point of their own: AwaTestingModule provides AwaTesting, beside
// AwaModule in manual mode (`testing: true`); the root entry exports neither.
export const testingChecks = [
  true satisfies NotExported<'AwaTesting'>,
  true satisfies NotExported<'AwaTestingModule'>,
  true satisfies NotAny<typeof AwaTestingModule>,
];
export const testingModules: unknown[] = [AwaModule.forRoot({ migrationsRun: true, testing: true }), AwaTestingModule];
