// A producer (no handlers): enqueues COUNT 'pack.work' jobs of MS ms each, prints their ids.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, QueueProducer } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { awaOptions, dataSourceOptions, say } from './consumer.options';

@Module({
  imports: [TypeOrmModule.forRoot(dataSourceOptions), ScheduleModule.forRoot(), AwaModule.forRoot(awaOptions)],
})
class ProducerModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(ProducerModule, { logger: ['error', 'warn'] });
  try {
    const producer = app.get(QueueProducer);
    const items = Array.from({ length: Number(process.env.COUNT) }, () => ({
      kind: 'pack.work',
      args: { ms: Number(process.env.MS) },
      queue: 'pack',
    }));
    // In a transaction of the app's own: the jobs exist, and workers wake, once it commits.
    const jobs = await app.get(DataSource).transaction((manager) => producer.enqueueMany(items, { manager }));
    say(`ENQUEUED ${jobs.map((j) => j.id).join(',')}`);
  } finally {
    await app.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
