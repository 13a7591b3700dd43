// A producer-only process for the unique race test (unique-processes.spec.ts). It loads the built
// package ('nestjs-awa' resolves to dist/ through the package's own exports; run `npm run build`).
// Env: AWA_URL, AWA_CALLS, AWA_START_LOCK. Prints READY, waits until the test releases the advisory lock
// AWA_START_LOCK, then calls enqueue('race.unique', ..., { unique: {} }) AWA_CALLS times at once,
// prints RESULT <json> and exits.
import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, QueueProducer } from 'nestjs-awa';
import { DataSource } from 'typeorm';

class EnqueuerModule {}
Module({
  imports: [
    TypeOrmModule.forRoot({ type: 'postgres', url: process.env.AWA_URL, autoLoadEntities: true }),
    ScheduleModule.forRoot(),
    AwaModule.forRoot({ queues: { default: {} } }),
  ],
})(EnqueuerModule);

const app = await NestFactory.createApplicationContext(EnqueuerModule, { logger: ['error', 'warn'] });
const producer = app.get(QueueProducer);
process.stdout.write('READY\n');
const lock = Number(process.env.AWA_START_LOCK);
await app.get(DataSource).query('SELECT pg_advisory_lock_shared($1), pg_advisory_unlock_shared($1)', [lock]);
const calls = Number(process.env.AWA_CALLS);
const settled = await Promise.allSettled(
  Array.from({ length: calls }, (_, i) => producer.enqueue('race.unique', { i }, { unique: {} })),
);
const jobs = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
const errors = settled.filter((s) => s.status === 'rejected').map((s) => String(s.reason));
const result = {
  inserted: jobs.filter((j) => !j.duplicate).length,
  duplicates: jobs.filter((j) => j.duplicate).length,
  ids: [...new Set(jobs.map((j) => j.id))],
  errors: [...new Set(errors)],
};
process.stdout.write(`RESULT ${JSON.stringify(result)}\n`);
await app.close();
process.exit(0);
