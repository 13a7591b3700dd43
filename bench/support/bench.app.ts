import 'reflect-metadata';
import { Module, type DynamicModule, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, DEFAULT_QUEUE, type AwaModuleOptions } from 'nestjs-awa';
// Internal, by path: the resolver is pure, so this copy fills in the same defaults as the package's.
import type { ResolvedAwaOptions } from '../../lib/options/awa-options.resolved.js';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import { BENCH_HOOKS, BenchHandlers, BenchHooks } from './bench.handlers.js';

@Module({})
class BenchAppModule {}

export interface BenchApp {
  app: INestApplicationContext;
  hooks: BenchHooks;
}

/**
 * A Nest application context with TypeORM, @nestjs/schedule and AwaModule, as an app would have.
 * `withHandlers: false` gives a producer-only instance: it runs no worker. A second app in the same
 * process names its DataSource (`dataSource`), as an app with two DataSources must.
 */
/** BENCH_POOL: the size of each instance's pg pool; unset: TypeORM's default (10). */
export const BENCH_POOL = Number(process.env.BENCH_POOL) || 0;
/** The pool size as the results' `config.pool` says it. */
export const BENCH_POOL_LABEL = BENCH_POOL ? `BENCH_POOL (${BENCH_POOL})` : 'TypeORM/pg default (10)';

export async function createBenchApp(
  url: string,
  awa: AwaModuleOptions,
  withHandlers: boolean,
  dataSource?: string,
  /** More modules for the app, e.g. AwaTelemetryModule.forRoot() (the otel scenario). */
  imports: DynamicModule[] = [],
): Promise<BenchApp> {
  const hooks = new BenchHooks();
  const app = await NestFactory.createApplicationContext(
    {
      module: BenchAppModule,
      imports: [
        TypeOrmModule.forRoot({
          type: 'postgres',
          url,
          autoLoadEntities: true,
          logging: false,
          name: dataSource,
          ...(BENCH_POOL ? { extra: { max: BENCH_POOL } } : {}),
        }),
        ScheduleModule.forRoot(),
        AwaModule.forRoot({ migrationsRun: true, ...awa, dataSource }),
        ...imports,
      ],
      providers: [{ provide: BENCH_HOOKS, useValue: hooks }, ...(withHandlers ? [BenchHandlers] : [])],
    },
    { logger: ['error', 'warn'], abortOnError: false },
  );
  resolved.set(app, resolveAwaOptions({ migrationsRun: true, ...awa, dataSource }));
  return { app, hooks };
}

/** The resolved options of each app createBenchApp made. */
const resolved = new WeakMap<INestApplicationContext, ResolvedAwaOptions>();

/** The options an instance really runs with (defaults filled in), for a figure's config. */
export function effectiveOptions(app: INestApplicationContext): Record<string, unknown> {
  const options = resolved.get(app)!;
  const { name: _name, ...queue } = options.queues.get(DEFAULT_QUEUE)!;
  return {
    queue,
    heartbeatInterval: options.heartbeatInterval,
    heartbeatBatchSize: options.heartbeatBatchSize,
    maintenanceInterval: options.maintenanceInterval,
  };
}
