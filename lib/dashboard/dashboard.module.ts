import {
  Inject,
  Injectable,
  Logger,
  Module,
  type DynamicModule,
  type MiddlewareConsumer,
  type NestModule,
  type OnApplicationBootstrap,
  type Type,
} from '@nestjs/common';
import { DashboardConnections } from './dashboard-connections.js';
import { createDashboardController } from './dashboard.controller.js';
import { DashboardExceptionFilter } from './dashboard-exception.filter.js';
import {
  resolveDashboardOptions,
  type AwaDashboardOptions,
  type ResolvedDashboardOptions,
} from './dashboard.options.js';
import { DashboardService } from './dashboard.service.js';
import { DASHBOARD_CONTROLLER, DASHBOARD_OPTIONS } from './dashboard.tokens.js';
import { AwaDashboardMessages } from './dashboard.messages.js';

/** Says loudly, at boot, that a dashboard without a guard is open to anyone. */
@Injectable()
class DashboardBootWarning implements OnApplicationBootstrap {
  constructor(@Inject(DASHBOARD_OPTIONS) private readonly options: ResolvedDashboardOptions) {}

  onApplicationBootstrap(): void {
    if (!this.options.guard) new Logger('AwaDashboard').warn(AwaDashboardMessages.openWarning(this.options.path));
  }
}

/**
 * The dashboard: pages and a JSON API under `path`, served by the app itself (Express or Fastify).
 * Import it next to AwaModule: `AwaDashboardModule.forRoot({ path: '/awa', guard: AdminGuard })`.
 */
@Module({})
export class AwaDashboardModule implements NestModule {
  constructor(
    @Inject(DASHBOARD_CONTROLLER) private readonly controller: Type<unknown>,
    private readonly connections: DashboardConnections,
  ) {}

  static forRoot(options: AwaDashboardOptions = {}): DynamicModule {
    const resolved = resolveDashboardOptions(options); // bad options fail here, naming the option
    const controller = createDashboardController(resolved);
    return {
      module: AwaDashboardModule,
      imports: resolved.imports,
      controllers: [controller],
      providers: [
        { provide: DASHBOARD_OPTIONS, useValue: resolved },
        { provide: DASHBOARD_CONTROLLER, useValue: controller },
        DashboardConnections,
        DashboardService,
        DashboardExceptionFilter,
        DashboardBootWarning,
        ...(resolved.guard ? [resolved.guard] : []),
      ],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(this.connections.track).forRoutes(this.controller);
  }
}
