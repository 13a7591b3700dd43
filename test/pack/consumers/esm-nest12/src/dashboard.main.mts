// An HTTP app serving the dashboard at /awa, its pages and assets from the installed package.
// Prints LISTENING <dashboard url> <where 'nestjs-awa' was loaded from>.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaDashboardModule, AwaModule } from 'nestjs-awa';
import { fileURLToPath } from 'node:url';
import { awaOptions, dataSourceOptions, say } from './consumer.options.mjs';

@Module({
  imports: [
    TypeOrmModule.forRoot(dataSourceOptions),
    ScheduleModule.forRoot(),
    AwaModule.forRoot(awaOptions),
    AwaDashboardModule.forRoot({ path: '/awa' }),
  ],
})
class DashboardAppModule {}

const app = await NestFactory.create(DashboardAppModule, { logger: ['error'] });
app.enableShutdownHooks();
await app.listen(0, '127.0.0.1'); // a free port
say(`LISTENING ${await app.getUrl()}/awa ${fileURLToPath(import.meta.resolve('nestjs-awa'))}`);
