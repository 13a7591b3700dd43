// A worker: handles 'pack.work' jobs. Prints READY, then START/DONE lines per attempt.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { fileURLToPath } from 'node:url';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, MaintenanceService } from 'nestjs-awa';
import { AwaTelemetryModule } from 'nestjs-awa/telemetry';
import { awaOptions, dataSourceOptions, say } from './consumer.options.mjs';
import { PackHandlers } from './pack.handlers.mjs';

@Module({
  imports: [
    TypeOrmModule.forRoot(dataSourceOptions),
    ScheduleModule.forRoot(),
    AwaModule.forRoot(awaOptions),
    // Loads @opentelemetry/api; with no OTel SDK registered it reports nothing (and costs nothing).
    AwaTelemetryModule.forRoot(),
  ],
  providers: [PackHandlers],
})
class WorkerModule {}

const app = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error', 'warn'] });
app.enableShutdownHooks();
// Where 'nestjs-awa' and 'nestjs-awa/telemetry' were loaded from: the test checks both are the tarball's ESM build.
const loaded = ['nestjs-awa', 'nestjs-awa/telemetry'].map((name) => fileURLToPath(import.meta.resolve(name)));
say(`READY ${process.pid} ${app.get(MaintenanceService).isLeader} ${loaded.join(' ')}`);
