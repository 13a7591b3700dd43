import type { Provider } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, type AwaModuleOptions } from 'nestjs-awa';
import { AwaTestingModule } from 'nestjs-awa/testing';
import { useBlockApp, type BlockApp } from '../support/block-app.js';

/**
 * An app as a user's e2e test builds it: the real modules, AwaModule in manual mode (testing: true)
 * and AwaTestingModule, which provides AwaTesting.
 */
export async function startManualApp(url: string, providers: Provider[], awa: AwaModuleOptions = {}) {
  const moduleRef: TestingModule = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url, autoLoadEntities: true, logging: false }),
      ScheduleModule.forRoot(),
      AwaModule.forRoot({ migrationsRun: true, testing: true, ...awa }),
      AwaTestingModule,
    ],
    providers,
  }).compile();
  return moduleRef.init();
}

/** startManualApp for the enclosing describe block, on a database of its own (useBlockApp). */
export const useManualApp = (providers: Provider[], awa: AwaModuleOptions = {}): BlockApp =>
  useBlockApp((url) => startManualApp(url, providers, awa));
