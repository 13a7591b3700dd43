import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { SchedulerRegistry } from '@nestjs/schedule';
import { TypeOrmModule, getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AWA_OPTIONS, AWA_RAW_OPTIONS, AWA_SCHEDULER } from './awa.constants.js';
import { QueueAdmin } from './admin/queue-admin.service.js';
import { AwaExplorer } from './awa.explorer.js';
import { AwaLifecycle } from './awa.lifecycle.js';
import { AwaMessages } from './awa.messages.js';
import { AwaStatus } from './awa.status.js';
import { AWA_DATA_SOURCE, AwaDatabase } from './database/awa-database.js';
import { SchemaVerifier } from './database/schema-verifier.js';
import { AwaEvents } from './events/awa-events.js';
import { AwaSetupError } from './errors/awa-setup.error.js';
import { AwaEntities } from './entities/index.js';
import { HeartbeatService } from './heartbeat/heartbeat.service.js';
import { InstanceSession } from './instance/instance-session.js';
import { maintenanceLeaderProvider } from './maintenance/maintenance-leader.provider.js';
import { MaintenanceService } from './maintenance/maintenance.service.js';
import { CleanupTask } from './maintenance/tasks/cleanup.task.js';
import { FlowKeysCleanupTask } from './maintenance/tasks/flow-keys-cleanup.task.js';
import { HistoryRotationTask } from './maintenance/tasks/history-rotation.task.js';
import { OrphanRescueTask } from './maintenance/tasks/orphan-rescue.task.js';
import { PromotionTask } from './maintenance/tasks/promotion.task.js';
import { DEADLINE_RESCUE, HEARTBEAT_RESCUE, rescueTaskProvider } from './maintenance/tasks/rescue.task.js';
import { SchedulePruneTask } from './maintenance/tasks/schedule-prune.task.js';
import { ScheduleTickTask } from './maintenance/tasks/schedule-tick.task.js';
import { UnhandledKindsTask } from './maintenance/tasks/unhandled-kinds.task.js';
import type { AwaModuleAsyncOptions, AwaModuleOptions } from './options/awa-options.interface.js';
import { JobSchedules } from './schedules/job-schedules.service.js';
import { SchedulePruner } from './schedules/schedule-prune.js';
import { checkAsyncOptions, resolveAsyncOptions, resolveAwaOptions } from './options/awa-options.resolver.js';
import { QueueProducer } from './producer/queue-producer.js';
import { LeaseRegistry } from './worker/lease-registry.js';
import { LeaseWriter } from './worker/lease-writer.js';
import { WorkerService } from './worker/worker.service.js';
import { workerWakeupProvider } from './worker/worker-wakeup.provider.js';

const SERVICES: Provider[] = [
  AwaDatabase,
  SchemaVerifier,
  AwaExplorer,
  AwaLifecycle,
  InstanceSession,
  LeaseRegistry,
  LeaseWriter,
  WorkerService,
  workerWakeupProvider,
  HeartbeatService,
  maintenanceLeaderProvider,
  MaintenanceService,
  QueueProducer,
  rescueTaskProvider(HEARTBEAT_RESCUE),
  rescueTaskProvider(DEADLINE_RESCUE),
  OrphanRescueTask,
  PromotionTask,
  CleanupTask,
  HistoryRotationTask,
  FlowKeysCleanupTask,
  UnhandledKindsTask,
  AwaStatus,
  QueueAdmin,
  ScheduleTickTask,
  SchedulePruneTask,
  SchedulePruner,
  JobSchedules,
  AwaEvents,
];
const EXPORTS = [
  QueueProducer,
  HeartbeatService,
  MaintenanceService,
  AwaDatabase,
  AWA_OPTIONS,
  AwaStatus,
  QueueAdmin,
  JobSchedules,
  AwaEvents,
  // Not public API: what the test helpers (nestjs-awa/testing) build on to run attempts as a worker does.
  AwaExplorer,
  InstanceSession,
  LeaseWriter,
];

/**
 * The job queue. Import it once, next to TypeOrmModule.forRoot(...) and ScheduleModule.forRoot();
 * it is global, so QueueProducer can be injected anywhere.
 */
@Module({})
export class AwaModule {
  static forRoot(options: AwaModuleOptions = {}): DynamicModule {
    const resolved = resolveAwaOptions(options); // bad options fail here, naming the option
    return AwaModule.build(resolved.dataSource, [{ provide: AWA_OPTIONS, useValue: resolved }]);
  }

  static forRootAsync(options: AwaModuleAsyncOptions): DynamicModule {
    checkAsyncOptions(options);
    return AwaModule.build(
      options.dataSource,
      [
        { provide: AWA_RAW_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] },
        {
          provide: AWA_OPTIONS,
          useFactory: (raw: AwaModuleOptions) => resolveAsyncOptions(raw, options.dataSource),
          inject: [AWA_RAW_OPTIONS],
        },
      ],
      options.imports ?? [],
    );
  }

  private static build(
    dataSource: string | undefined,
    optionProviders: Provider[],
    imports: DynamicModule['imports'] = [],
  ): DynamicModule {
    return {
      module: AwaModule,
      global: true,
      imports: [...imports, DiscoveryModule, TypeOrmModule.forFeature(AwaEntities, dataSource)],
      providers: [
        ...optionProviders,
        {
          provide: AWA_DATA_SOURCE,
          useFactory: (ds: DataSource | undefined) => {
            if (!ds) throw new AwaSetupError(AwaMessages.dataSourceMissing(dataSource ?? 'default'));
            return ds;
          },
          inject: [{ token: getDataSourceToken(dataSource), optional: true }],
        },
        {
          provide: AWA_SCHEDULER,
          useFactory: (registry: SchedulerRegistry | undefined) => {
            if (!registry) throw new AwaSetupError(AwaMessages.scheduleModuleMissing());
            return registry;
          },
          inject: [{ token: SchedulerRegistry, optional: true }],
        },
        ...SERVICES,
      ],
      exports: EXPORTS,
    };
  }
}
