import type { TypeOrmModuleOptions } from '@nestjs/typeorm';
import { AwaEntities, type AwaModuleOptions } from 'nestjs-awa';
import { AwaMigrations } from 'nestjs-awa/migrations';
import type { DataSourceOptions } from 'typeorm';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is required');

/** The entities listed by hand (no autoLoadEntities), as an app with its own DataSource does. */
export const dataSourceOptions: DataSourceOptions & TypeOrmModuleOptions = {
  type: 'postgres',
  url,
  entities: [...AwaEntities],
  migrations: [...AwaMigrations],
};

/** Short intervals, so a dead worker's job is rescued within seconds. */
export const awaOptions: AwaModuleOptions = {
  heartbeatInterval: 200,
  heartbeatStaleAfter: 1_000,
  maintenanceInterval: 200,
  orphanSweepInterval: 200,
  shutdownTimeout: 2_000,
  queues: {
    pack: {
      concurrency: Number(process.env.CONCURRENCY ?? 2),
      pollInterval: 200,
      retryBaseDelay: 50,
      retryMaxDelay: 200,
    },
  },
};

export const say = (line: string): void => void process.stdout.write(`${line}\n`);
