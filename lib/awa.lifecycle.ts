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
import { HeartbeatService } from './heartbeat/heartbeat.service.js';
import { InstanceSession } from './instance/instance-session.js';
import { MaintenanceService } from './maintenance/maintenance.service.js';
import type { ResolvedAwaOptions } from './options/awa-options.resolved.js';
import { JobSchedules } from './schedules/job-schedules.service.js';
import { WorkerService } from './worker/worker.service.js';

/**
 * The one place that orders start and stop, since Nest runs the hooks of one module's providers
 * concurrently. Boot: verify the schema and find handlers (init); check the declared schedules,
 * open the instance session, store the schedules, then heartbeat, maintenance and workers
 * (bootstrap). Shutdown runs the other way round, before TypeORM closes its DataSource: drain and
 * release jobs while heartbeats still run, then stop.
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
  ) {}

  async onModuleInit(): Promise<void> {
    await this.verifier.verify();
    this.status.markSchemaVerified();
    this.explorer.explore();
  }

  async onApplicationBootstrap(): Promise<void> {
    const schedules = this.schedules.declared(); // checked before anything starts
    // Manual mode: no session, heartbeat, maintenance or workers; the schedules are stored for fireSchedules.
    if (this.options.testing) return this.schedules.storeDeclared(schedules);
    const handlers = Object.fromEntries([...this.explorer.handlers.values()].map((h) => [h.kind, h.queue]));
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
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.status.markShuttingDown();
    if (!this.started) return;
    this.started = false;
    await this.workers.stop();
    await this.heartbeat.stop();
    await this.maintenance.stop();
    await this.session.stop();
  }
}
