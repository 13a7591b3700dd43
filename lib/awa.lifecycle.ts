import {
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { AwaExplorer } from './awa.explorer.js';
import { SchemaVerifier } from './database/schema-verifier.js';
import { HeartbeatService } from './heartbeat/heartbeat.service.js';
import { InstanceSession } from './instance/instance-session.js';
import { MaintenanceService } from './maintenance/maintenance.service.js';
import { WorkerService } from './worker/worker.service.js';

/**
 * The one place that orders start and stop, since Nest runs the hooks of one module's providers
 * concurrently. Boot: verify the schema and find handlers (init); open the instance session, then
 * heartbeat, maintenance and workers (bootstrap). Shutdown runs the other way round, before
 * TypeORM closes its DataSource: drain and release jobs while heartbeats still run, then stop.
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
  ) {}

  async onModuleInit(): Promise<void> {
    await this.verifier.verify();
    this.explorer.explore();
  }

  async onApplicationBootstrap(): Promise<void> {
    const handlers = Object.fromEntries([...this.explorer.handlers.values()].map((h) => [h.kind, h.queue]));
    await this.session.start(this.workers.queues, handlers);
    this.started = true;
    this.heartbeat.start();
    this.maintenance.start();
    this.workers.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.workers.stop();
    await this.heartbeat.stop();
    await this.maintenance.stop();
    await this.session.stop();
  }
}
