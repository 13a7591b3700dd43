import {
  Injectable,
  Module,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
  type LoggerService,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, JobHandler, type Job } from 'nestjs-awa';
import { AwaDashboardModule, type AwaDashboardOptions } from 'nestjs-awa/dashboard';
import { FAST_OPTIONS } from '../support/test-app.js';

/** What the test handlers do: `flaky` jobs fail while `failing` is set; `slow` ones wait for `release`. */
export const handlerControl = {
  failing: true,
  completed: [] as string[],
  /** `invoice.render` jobs run until this resolves. */
  invoices: gate(),
};

function gate(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => undefined as void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

@Injectable()
export class DashboardTestHandlers {
  @JobHandler('email.send', { queue: 'emails' })
  send(job: Job<unknown>) {
    handlerControl.completed.push(job.id);
    return { sent: true };
  }

  @JobHandler('invoice.render', { queue: 'emails' })
  async render() {
    await handlerControl.invoices.promise;
    return { pdf: 'invoice.pdf' };
  }

  @JobHandler('report.flaky', { queue: 'reports' })
  flaky(job: Job<unknown>) {
    if (handlerControl.failing) throw new Error(`report ${job.id} failed: printer on fire`);
    handlerControl.completed.push(job.id);
    return { pages: 3 };
  }
}

/** Lets a request in only with `x-admin: yes`. */
@Injectable()
export class AdminHeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    return request.headers['x-admin'] === 'yes';
  }
}

export interface DashboardApp {
  app: INestApplication;
  /** The dashboard's URL, e.g. http://127.0.0.1:40123/awa */
  url: string;
  close(): Promise<void>;
}

export interface DashboardAppOptions {
  dbUrl: string;
  dashboard?: AwaDashboardOptions;
  fastify?: boolean;
  /** Run no workers (no handler providers). */
  noWorkers?: boolean;
  providers?: unknown[];
  /** Where Nest logs go (default: nowhere). */
  logger?: LoggerService;
  /** Credentialed CORS for every origin, as a host app may set it (`app.enableCors`). */
  corsWideOpen?: boolean;
}

/** A real Nest HTTP app with AwaModule, real workers and the dashboard, listening on a free port. */
export async function startDashboardApp(options: DashboardAppOptions): Promise<DashboardApp> {
  @Module({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: options.dbUrl, autoLoadEntities: true, logging: false }),
      ScheduleModule.forRoot(),
      AwaModule.forRoot({
        ...FAST_OPTIONS,
        queues: {
          default: { pollInterval: 200 },
          emails: { pollInterval: 200, retryBaseDelay: 50, retryMaxDelay: 200 },
          reports: { pollInterval: 200, maxAttempts: 1 },
        },
      }),
      AwaDashboardModule.forRoot(options.dashboard ?? { path: '/awa', refreshInterval: 300 }),
    ],
    providers: [...(options.noWorkers ? [] : [DashboardTestHandlers]), ...((options.providers ?? []) as [])],
  })
  class DashboardTestModule {}

  const app = options.fastify
    ? await NestFactory.create(DashboardTestModule, new FastifyAdapter(), { logger: options.logger ?? false })
    : await NestFactory.create(DashboardTestModule, { logger: options.logger ?? false });
  if (options.corsWideOpen) app.enableCors({ origin: true, credentials: true });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  const path = (options.dashboard?.path ?? '/awa').replace(/\/+$/, '');
  return {
    app,
    url: `http://127.0.0.1:${address.port}${path}`,
    close: () => app.close(),
  };
}

/** A Nest logger that keeps the warnings. */
export function warningLogger(): LoggerService & { warnings: string[] } {
  const warnings: string[] = [];
  const ignore = () => undefined;
  return { warnings, log: ignore, error: ignore, warn: (message: unknown) => warnings.push(String(message)) };
}

/** fetch, with a JSON body when one is given. */
export async function call(
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: any; type: string }> {
  const res = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: a page or an asset */
  }
  return { status: res.status, body, type: res.headers.get('content-type') ?? '' };
}
