import { Controller, Get, Injectable, type INestApplication, type Provider } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { request } from 'node:http';
import { AwaModule, type AwaModuleOptions } from 'nestjs-awa';
import { AwaHealthIndicator, AwaHealthModule } from 'nestjs-awa/health';

/** The /health endpoint as a user writes it. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly awa: AwaHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([() => this.awa.isHealthy()]);
  }
}

/** An HTTP app (platform-express) with TerminusModule, AwaModule and AwaHealthModule, listening on a free port. */
export async function startHealthApp(
  url: string,
  awa: AwaModuleOptions,
  providers: Provider[] = [],
): Promise<{ app: INestApplication; base: string }> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url, autoLoadEntities: true, logging: false }),
      ScheduleModule.forRoot(),
      AwaModule.forRoot(awa),
      TerminusModule.forRoot({ logger: false }),
      AwaHealthModule,
    ],
    controllers: [HealthController],
    providers,
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, base: await app.getUrl() };
}

export interface HealthResponse {
  status: number;
  body: { status: string; info?: Record<string, AwaDetails>; error?: Record<string, AwaDetails> };
}
export interface AwaDetails {
  status: string;
  instanceId: string;
  leader: boolean;
  connected: boolean;
  shuttingDown: boolean;
  mode: string;
  queues: Record<string, { lastTickMsAgo: number; stalled: boolean }>;
  problems?: string[];
}

/** GET /health on a connection of its own (no keep-alive, which would hold up the server's close). */
export function getHealth(base: string): Promise<HealthResponse> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}/health`, { agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as HealthResponse['body'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A handler that runs until released. */
@Injectable()
export class HeldJob {
  started = 0;
  private releaseAll: () => void = () => undefined;
  private readonly gate = new Promise<void>((resolve) => (this.releaseAll = resolve));

  release(): void {
    this.releaseAll();
  }

  async run(): Promise<void> {
    this.started++;
    await this.gate;
  }
}
