import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaErrorCodes, AwaModule, AwaSetupError, QueueProducer } from 'nestjs-awa';
import { AwaTesting, AwaTestingModule } from 'nestjs-awa/testing';
import { AwaTestingMessages } from '../../lib/testing/testing.messages.js';
import { caught } from '../support/caught.js';
import { startTestApp } from '../support/test-app.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';

/** AwaTesting exists only in an app that imports AwaTestingModule, and only with `testing: true`. */
describe('AwaTestingModule', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('AwaModule alone provides no AwaTesting, even with testing: true', async () => {
    const app = await startTestApp({ url: db.url, awa: { testing: true } });
    try {
      expect(app.get(QueueProducer)).toBeInstanceOf(QueueProducer);
      expect(() => app.get(AwaTesting)).toThrow(/AwaTesting/);
    } finally {
      await app.close();
    }
  });

  it('without testing: true, fails the boot with an AwaSetupError that says to set it', async () => {
    const error = await caught(() =>
      startTestApp({ url: db.url, awa: { testing: false }, imports: [AwaTestingModule] }),
    );
    expect(error).toBeInstanceOf(AwaSetupError);
    expect(error).toMatchObject({ code: AwaErrorCodes.setup, message: AwaTestingMessages.testingOff() });
    expect((error as Error).message).toContain('testing: true');
  });

  it('provides AwaTesting with forRootAsync too, to the providers of any module', async () => {
    @Module({ imports: [AwaTestingModule], providers: [{ provide: 'drainer', useExisting: AwaTesting }] })
    class FeatureTestModule {}
    const app = await Test.createTestingModule({
      imports: [
        TypeOrmModule.forRoot({ type: 'postgres', url: db.url, autoLoadEntities: true, logging: false }),
        ScheduleModule.forRoot(),
        AwaModule.forRootAsync({ useFactory: () => ({ migrationsRun: true, testing: true }) }),
        FeatureTestModule,
      ],
    }).compile();
    try {
      await app.init();
      expect(app.get('drainer')).toBeInstanceOf(AwaTesting);
      await app.get(QueueProducer).enqueue('nobody.handles', {});
      expect(await app.get(AwaTesting).drain()).toMatchObject({ completed: 0, jobs: [] });
      expect(await app.get(AwaTesting).expectEnqueued('nobody.handles')).toHaveLength(1);
    } finally {
      await app.close();
    }
  });
});
