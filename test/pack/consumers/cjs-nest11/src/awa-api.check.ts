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
} from 'nestjs-awa';
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
