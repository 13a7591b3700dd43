import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaEntities, AwaModule, JobHandler } from 'nestjs-awa';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

@Injectable()
class FirstMailer {
  @JobHandler('mail.send') send() {}
}
@Injectable()
class SecondMailer {
  @JobHandler('mail.send') deliver() {}
}
@Injectable()
class ReportsOnUnknownQueue {
  @JobHandler('report.render', { queue: 'reports' }) render() {}
}

/** Each misconfiguration fails the boot with a message that says what is wrong and how to fix it. */
describe('boot errors', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('fails when the awa schema is missing because migrations were not run', async () => {
    await expect(startTestApp({ url: db.url, awa: { migrationsRun: false } }))
      .rejects.toThrow(/the "awa" schema is missing.*AwaMigrations.*migrationsRun: true/s);
  });

  it('fails when ScheduleModule.forRoot() is not imported', async () => {
    await expect(startTestApp({ url: db.url, withoutSchedule: true }))
      .rejects.toThrow(/Import ScheduleModule\.forRoot\(\) once in your root module/);
  });

  it('fails when the entities are not registered on the DataSource', async () => {
    await expect(startTestApp({ url: db.url, autoLoadEntities: false }))
      .rejects.toThrow(/AwaJobEntity, AwaActiveLeaseEntity, AwaInstanceEntity are not registered.*autoLoadEntities: true/s);
  });

  it('names both handlers of a duplicated kind', async () => {
    await expect(startTestApp({ url: db.url, providers: [FirstMailer, SecondMailer] }))
      .rejects.toThrow('two handlers for job kind "mail.send": FirstMailer.send and SecondMailer.deliver');
  });

  it('fails when a handler is bound to a queue that is not configured', async () => {
    await expect(startTestApp({ url: db.url, providers: [ReportsOnUnknownQueue] }))
      .rejects.toThrow(/ReportsOnUnknownQueue\.render is bound to queue "reports", which is not configured/);
  });

  it('fails at boot for bad options given through forRootAsync', async () => {
    @Module({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, autoLoadEntities: true }),
        ScheduleModule.forRoot(),
        AwaModule.forRootAsync({ useFactory: () => ({ heartbeatInterval: -1 }) }),
      ],
    })
    class AsyncApp {}
    const moduleRef = Test.createTestingModule({ imports: [AsyncApp] });
    await expect(moduleRef.compile()).rejects.toThrow(/`heartbeatInterval`: must be greater than 0/);
  });

  it('boots with forRootAsync, entities listed by hand and migrations applied', async () => {
    @Module({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, entities: [...AwaEntities] }),
        ScheduleModule.forRoot(),
        AwaModule.forRootAsync({ useFactory: async () => ({ migrationsRun: true, heartbeatInterval: 500, heartbeatStaleAfter: 2_000 }) }),
      ],
    })
    class AsyncApp {}
    const app = await (await Test.createTestingModule({ imports: [AsyncApp] }).compile()).init();
    try {
      expect(app.get(AwaModule)).toBeInstanceOf(AwaModule);
    } finally {
      await app.close();
    }
  });
});
