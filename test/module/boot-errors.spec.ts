import { Injectable, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import {
  AwaEntities,
  AwaErrorCodes,
  AwaMigrations,
  AwaModule,
  AwaOptionError,
  AwaSetupError,
  HandlerRegistrationError,
  JobHandler,
  SchemaError,
} from 'nestjs-awa';
import { AwaMessages } from '../../lib/awa.messages.js';
import { caught } from '../support/caught.js';
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

/** Each misconfiguration fails the boot with a typed error, and a message that says what is wrong and how to fix it. */
describe('boot errors', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('fails when the awa schema is missing because migrations were not run', async () => {
    const error = await caught(() => startTestApp({ url: db.url, awa: { migrationsRun: false } }));
    expect(error).toBeInstanceOf(SchemaError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.schema,
      message: AwaMessages.schemaMissing(),
      pending: AwaMigrations.map((m) => m.name),
    });
  });

  it('fails when ScheduleModule.forRoot() is not imported', async () => {
    const error = await caught(() => startTestApp({ url: db.url, withoutSchedule: true }));
    expect(error).toBeInstanceOf(AwaSetupError);
    expect(error).toMatchObject({ code: AwaErrorCodes.setup, message: AwaMessages.scheduleModuleMissing() });
  });

  it('fails when the entities are not registered on the DataSource', async () => {
    const error = await caught(() => startTestApp({ url: db.url, autoLoadEntities: false }));
    expect(error).toBeInstanceOf(AwaSetupError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.setup,
      message: AwaMessages.entitiesMissing(['AwaJobEntity', 'AwaActiveLeaseEntity', 'AwaInstanceEntity']),
    });
  });

  it('names both handlers of a duplicated kind', async () => {
    const error = await caught(() => startTestApp({ url: db.url, providers: [FirstMailer, SecondMailer] }));
    expect(error).toBeInstanceOf(HandlerRegistrationError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.handlerRegistration,
      handler: 'SecondMailer.deliver',
      message: AwaMessages.duplicateHandler('mail.send', 'FirstMailer.send', 'SecondMailer.deliver'),
    });
  });

  it('fails when a handler is bound to a queue that is not configured', async () => {
    const error = await caught(() => startTestApp({ url: db.url, providers: [ReportsOnUnknownQueue] }));
    expect(error).toBeInstanceOf(HandlerRegistrationError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.handlerRegistration,
      handler: 'ReportsOnUnknownQueue.render',
      message: AwaMessages.handlerQueueUnknown('ReportsOnUnknownQueue.render', 'reports'),
    });
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
    const error = await caught(() => moduleRef.compile());
    expect(error).toBeInstanceOf(AwaOptionError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.invalidOption,
      path: 'heartbeatInterval',
      problem: 'must be greater than 0, got -1',
    });
  });

  it(
    'fails at boot for an unknown option returned by the ' + 'forRootAsync factory, naming the nearest known one',
    async () => {
      @Module({
        imports: [
          TypeOrmModule.forRoot({ type: 'postgres', url: db.url, autoLoadEntities: true }),
          ScheduleModule.forRoot(),
          AwaModule.forRootAsync({ useFactory: () => ({ queues: { default: { deadlineDurtion: 1_000 } as object } }) }),
        ],
      })
      class AsyncApp {}
      const error = await caught(() => Test.createTestingModule({ imports: [AsyncApp] }).compile());
      expect(error).toBeInstanceOf(AwaOptionError);
      expect(error).toMatchObject({
        code: AwaErrorCodes.invalidOption,
        path: 'queues.default.deadlineDurtion',
        problem: AwaMessages.unknownOption('deadlineDuration', true, []),
      });
    },
  );

  it('boots with forRootAsync, entities listed by hand and migrations applied', async () => {
    @Module({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, entities: [...AwaEntities] }),
        ScheduleModule.forRoot(),
        AwaModule.forRootAsync({
          useFactory: async () => ({ migrationsRun: true, heartbeatInterval: 500, heartbeatStaleAfter: 2_000 }),
        }),
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
