import type { Provider, Type } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, type AwaModuleOptions } from 'nestjs-awa';

/** Short intervals, so recovery paths run in test time. */
export const FAST_OPTIONS: AwaModuleOptions = {
  heartbeatInterval: 200,
  heartbeatStaleAfter: 1_000,
  maintenanceInterval: 200,
  orphanSweepInterval: 200,
  migrationsRun: true,
  shutdownTimeout: 2_000,
  queues: { default: { pollInterval: 200, retryBaseDelay: 50, retryMaxDelay: 200 } },
};

export interface TestAppOptions {
  url: string;
  awa?: AwaModuleOptions;
  providers?: Provider[];
  imports?: Type[];
  /** Leave out ScheduleModule.forRoot(), to test the boot error. */
  withoutSchedule?: boolean;
  autoLoadEntities?: boolean;
  /** Start from the shipped defaults instead of FAST_OPTIONS. */
  defaultOptions?: boolean;
  /** The pg Pool's `max` (pg's default: 10). */
  poolMax?: number;
}

/** A Nest application context with TypeORM, @nestjs/schedule and AwaModule, initialised. */
export async function startTestApp(options: TestAppOptions): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({
        type: 'postgres',
        url: options.url,
        autoLoadEntities: options.autoLoadEntities ?? true,
        logging: false,
        ...(options.poolMax === undefined ? {} : { extra: { max: options.poolMax } }),
      }),
      ...(options.withoutSchedule ? [] : [ScheduleModule.forRoot()]),
      AwaModule.forRoot({ ...(options.defaultOptions ? {} : FAST_OPTIONS), ...options.awa }),
      ...(options.imports ?? []),
    ],
    providers: options.providers ?? [],
  }).compile();
  return initOrClose(moduleRef);
}

/** Initialises a compiled app; one whose boot fails is closed before the error is rethrown. */
export async function initOrClose(app: TestingModule): Promise<TestingModule> {
  try {
    await app.init();
  } catch (error) {
    await app.close().catch(() => undefined);
    throw error;
  }
  return app;
}

export { waitFor } from './wait-for.js';
