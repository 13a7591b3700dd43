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
import { AwaModuleEntry, AwaRegistry, AwaRegistryModule } from './awa.registry.js';
import { AwaStatus } from './awa.status.js';
import { AWA_DATA_SOURCE, AWA_READ_DATABASE, AwaDatabase } from './database/awa-database.js';
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
import { JobEventsCleanupTask } from './maintenance/tasks/job-events-cleanup.task.js';
import { JobEventGroups } from './events/job-event-groups.service.js';
import { OrphanRescueTask } from './maintenance/tasks/orphan-rescue.task.js';
import { PromotionTask } from './maintenance/tasks/promotion.task.js';
import { DEADLINE_RESCUE, HEARTBEAT_RESCUE, rescueTaskProvider } from './maintenance/tasks/rescue.task.js';
import { SchedulePruneTask } from './maintenance/tasks/schedule-prune.task.js';
import { ScheduleTickTask } from './maintenance/tasks/schedule-tick.task.js';
import { HotTableVacuumTask } from './maintenance/tasks/hot-table-vacuum.task.js';
import { PlannerStatisticsTask } from './maintenance/tasks/planner-statistics.task.js';
import { UnhandledKindsTask } from './maintenance/tasks/unhandled-kinds.task.js';
import type { AwaModuleAsyncOptions, AwaModuleOptions } from './options/awa-options.interface.js';
import type { ResolvedAwaOptions } from './options/awa-options.resolved.js';
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
  JobEventsCleanupTask,
  JobEventGroups,
  UnhandledKindsTask,
  HotTableVacuumTask,
  PlannerStatisticsTask,
  AwaStatus,
  QueueAdmin,
  ScheduleTickTask,
  SchedulePruneTask,
  SchedulePruner,
  JobSchedules,
  AwaEvents,
];
/** The module's entry in the app's AwaRegistry, registered as Nest builds the module. */
const AWA_MODULE_ENTRY = Symbol('AWA_MODULE_ENTRY');
/** The services the registry hands out by class: what routes by queue, and what covers every module. */
const ENTRY_PARTS = [
  AwaDatabase,
  AWA_READ_DATABASE,
  QueueProducer,
  QueueAdmin,
  AwaStatus,
  AwaEvents,
  JobSchedules,
  MaintenanceService,
  JobEventGroups,
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
  JobEventGroups,
  // Not public API: what the test helpers (nestjs-awa/testing) build on to run attempts as a worker does.
  AwaExplorer,
  InstanceSession,
  LeaseWriter,
];

/**
 * The job queue. Import it once, next to TypeOrmModule.forRoot(...) and ScheduleModule.forRoot();
 * it is global, so QueueProducer can be injected anywhere. An app may import more of it, each with a
 * `name` and a DataSource of its own (docs/multiple-databases.md): the default (unnamed) module's
 * QueueProducer and QueueAdmin route each call to the module of its queue; a named module exports nothing.
 */
@Module({})
export class AwaModule {
  static forRoot(options: AwaModuleOptions = {}): DynamicModule {
    const resolved = resolveAwaOptions(options); // bad options fail here, naming the option
    return AwaModule.build(resolved, [{ provide: AWA_OPTIONS, useValue: resolved }]);
  }

  static forRootAsync(options: AwaModuleAsyncOptions): DynamicModule {
    checkAsyncOptions(options);
    return AwaModule.build(
      options,
      [
        { provide: AWA_RAW_OPTIONS, useFactory: options.useFactory, inject: options.inject ?? [] },
        {
          provide: AWA_OPTIONS,
          useFactory: (raw: AwaModuleOptions) => resolveAsyncOptions(raw, options),
          inject: [AWA_RAW_OPTIONS],
        },
      ],
      options.imports ?? [],
    );
  }

  private static build(
    { name, dataSource, readDataSource }: Pick<AwaModuleOptions, 'name' | 'dataSource' | 'readDataSource'>,
    optionProviders: Provider[],
    imports: DynamicModule['imports'] = [],
  ): DynamicModule {
    const dataSourceNamed = (source: string | undefined) => (ds: DataSource | undefined) => {
      if (!ds) throw new AwaSetupError(AwaMessages.dataSourceMissing(source ?? 'default'));
      return ds;
    };
    return {
      module: AwaModule,
      // A named module is not global: its services would stand in for the default module's.
      global: name === undefined,
      imports: [...imports, DiscoveryModule, AwaRegistryModule, TypeOrmModule.forFeature(AwaEntities, dataSource)],
      providers: [
        ...optionProviders,
        {
          provide: AWA_DATA_SOURCE,
          useFactory: dataSourceNamed(dataSource),
          inject: [{ token: getDataSourceToken(dataSource), optional: true }],
        },
        {
          // The replica's own AwaDatabase, for read-only statements; the primary's without one.
          provide: AWA_READ_DATABASE,
          useFactory: (db: AwaDatabase, options: ResolvedAwaOptions, replica: DataSource | undefined) =>
            readDataSource === undefined ? db : new AwaDatabase(dataSourceNamed(readDataSource)(replica), options),
          inject: [
            AwaDatabase,
            AWA_OPTIONS,
            ...(readDataSource === undefined ? [] : [{ token: getDataSourceToken(readDataSource), optional: true }]),
          ],
        },
        {
          provide: AWA_MODULE_ENTRY,
          useFactory: (registry: AwaRegistry, options: ResolvedAwaOptions, ds: DataSource, ...parts: object[]) => {
            const entry = new AwaModuleEntry(options, ds);
            ENTRY_PARTS.forEach((token, i) => entry.add(token as never, parts[i]));
            return registry.register(entry);
          },
          inject: [AwaRegistry, AWA_OPTIONS, AWA_DATA_SOURCE, ...ENTRY_PARTS],
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
      exports: name === undefined ? EXPORTS : [],
    };
  }
}
