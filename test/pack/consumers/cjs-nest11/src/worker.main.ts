// A worker: handles 'pack.work' jobs. Prints READY, then START/DONE lines per attempt.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, MaintenanceService } from 'nestjs-awa';
import { awaOptions, dataSourceOptions, say } from './consumer.options';
import { PackHandlers } from './pack.handlers';

@Module({
  imports: [TypeOrmModule.forRoot(dataSourceOptions), ScheduleModule.forRoot(), AwaModule.forRoot(awaOptions)],
  providers: [PackHandlers],
})
class WorkerModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error', 'warn'] });
  app.enableShutdownHooks();
  // Where 'nestjs-awa' was loaded from: the test checks it is the tarball's CommonJS build.
  say(`READY ${process.pid} ${app.get(MaintenanceService).isLeader} ${require.resolve('nestjs-awa')}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
