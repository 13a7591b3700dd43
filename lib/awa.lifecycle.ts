import {
  Inject,
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { AWA_OPTIONS } from './awa.constants.js';
import { AwaExplorer } from './awa.explorer.js';
import { AwaStatus } from './awa.status.js';
import { SchemaVerifier } from './database/schema-verifier.js';
import { JobEventGroups } from './events/job-event-groups.service.js';
import { HeartbeatService } from './heartbeat/heartbeat.service.js';
import { InstanceSession } from './instance/instance-session.js';
import { MaintenanceService } from './maintenance/maintenance.service.js';
import type { ResolvedAwaOptions } from './options/awa-options.resolved.js';
import { JobSchedules } from './schedules/job-schedules.service.js';
import { WorkerService } from './worker/worker.service.js';

/**
 * The one place that orders start and stop, since Nest runs the hooks of one module's providers
 * concurrently. Boot: verify the schema and find handlers and event groups (init); check the declared
 * schedules, store the event groups' subscriptions, open the instance session, store the schedules,
 * then heartbeat, maintenance, workers and event groups (bootstrap). Shutdown runs the other way round,
 * before TypeORM closes its DataSource: stop the event groups, drain and release jobs while heartbeats
 * still run, then stop.
 * With `testing: true` nothing is started: jobs run only when a test drains them (AwaTesting).
 */
@Injectable()
export class AwaLifecycle implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private started = false;

  constructor(
    private readonly verifier: SchemaVerifier,
    private readonly explorer: AwaExplorer,
    private readonly session: InstanceSession,
    private readonly heartbeat: HeartbeatService,
    private readonly maintenance: MaintenanceService,
    private readonly workers: WorkerService,
    private readonly status: AwaStatus,
    private readonly schedules: JobSchedules,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly eventGroups: JobEventGroups,
  ) {}

  async onModuleInit(): Promise<void> {
    await this.verifier.verify();
    this.status.markSchemaVerified();
    this.explorer.explore();
    this.eventGroups.explore();
  }

  async onApplicationBootstrap(): Promise<void> {
    const schedules = this.schedules.declared(); // checked before anything starts
    // Before any transition of this instance: its events then find every subscription of its groups.
    await this.eventGroups.storeSubscriptions();
    // Manual mode: no session, heartbeat, maintenance or workers; the schedules are stored for fireSchedules.
    if (this.options.testing) return this.schedules.storeDeclared(schedules);
    const handlers = Object.fromEntries([...this.explorer.handlers.values()].map((h) => [h.kind, h.queue]));
    this.workers.subscribe();
    await this.session.start(
      this.workers.queues,
      handlers,
      schedules.map((s) => s.name),
    );
    this.started = true;
    // Once the instance row names them: a leader's prune never takes a schedule being declared.
    await this.schedules.storeDeclared(schedules);
    this.status.markStarted();
    this.heartbeat.start();
    this.maintenance.start();
    this.workers.start();
    this.eventGroups.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.status.markShuttingDown();
    if (!this.started) return;
    this.started = false;
    await this.eventGroups.stop();
    await this.workers.stop();
    await this.heartbeat.stop();
    await this.maintenance.stop();
    await this.session.stop();
  }
}
