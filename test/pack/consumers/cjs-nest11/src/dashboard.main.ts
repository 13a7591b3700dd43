// An HTTP app serving the dashboard at /awa, its pages and assets from the installed package.
// Prints LISTENING <dashboard url> <where 'nestjs-awa' and 'nestjs-awa/dashboard' were loaded from>.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule } from 'nestjs-awa';
import { AwaDashboardModule } from 'nestjs-awa/dashboard';
import { awaOptions, dataSourceOptions, say } from './consumer.options';

@Module({
  imports: [
    TypeOrmModule.forRoot(dataSourceOptions),
    ScheduleModule.forRoot(),
    AwaModule.forRoot(awaOptions),
    AwaDashboardModule.forRoot({ path: '/awa' }),
  ],
})
class DashboardAppModule {}

async function main(): Promise<void> {
  const app = await NestFactory.create(DashboardAppModule, { logger: ['error'] });
  app.enableShutdownHooks();
  await app.listen(0, '127.0.0.1'); // a free port
  say(
    `LISTENING ${await app.getUrl()}/awa ${require.resolve('nestjs-awa')} ${require.resolve('nestjs-awa/dashboard')}`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
