import { Injectable, type DynamicModule, type Provider } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { Test, type TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule, JobHandler, Periodic, type AwaModuleOptions, type Job } from 'nestjs-awa';
import { FAST_OPTIONS, initOrClose } from '../support/test-app.js';

/** The billing module's DataSource, on a database of its own. */
export const BILLING_DB = 'billingDb';
/** A second DataSource on the billing database: the billing module's read replica, in the tests that set one. */
export const BILLING_REPLICA = 'billingReplica';

/** FAST_OPTIONS without the queue 'default', which only the default module has. */
const { queues: _defaultQueues, ...FAST_SETTINGS } = FAST_OPTIONS;
export const FAST_QUEUE = FAST_OPTIONS.queues!.default!;

/** The billing module: name 'billing', queue 'invoices', on BILLING_DB. */
export function billingModule(extra: AwaModuleOptions = {}): DynamicModule {
  return AwaModule.forRoot({
    ...FAST_SETTINGS,
    name: 'billing',
    dataSource: BILLING_DB,
    queues: { invoices: FAST_QUEUE },
    ...extra,
  });
}

/** Which handler ran which job, in which module's database (by the job's queue). */
export const ran: Array<{ kind: string; id: string; queue: string }> = [];

@Injectable()
export class MailHandlers {
  @JobHandler('mail.send') send(job: Job) {
    ran.push({ kind: job.kind, id: job.id, queue: job.queue });
  }
}

@Injectable()
export class InvoiceHandlers {
  // A schedule of the billing module (stored in its database); it fires once a year.
  @Periodic('0 0 1 1 *')
  @JobHandler('invoice.issue', { queue: 'invoices' })
  issue(job: Job) {
    ran.push({ kind: job.kind, id: job.id, queue: job.queue });
  }
}

export interface MultiAppOptions {
  mainUrl: string;
  billingUrl: string;
  /** The AwaModules (default: the default module and billingModule()). */
  modules?: DynamicModule[];
  providers?: Provider[];
  /** Adds a DataSource BILLING_REPLICA on billingUrl, whose connections say application_name 'awa-replica'. */
  replica?: boolean;
  imports?: DynamicModule[];
}

/** An app of two databases: the default DataSource (mainUrl) and BILLING_DB (billingUrl). */
export async function startMultiApp(options: MultiAppOptions): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      TypeOrmModule.forRoot({ type: 'postgres', url: options.mainUrl, autoLoadEntities: true, logging: false }),
      TypeOrmModule.forRoot({
        name: BILLING_DB,
        type: 'postgres',
        url: options.billingUrl,
        autoLoadEntities: true,
        logging: false,
        extra: { application_name: 'awa-billing' },
      }),
      ...(options.replica
        ? [
            TypeOrmModule.forRoot({
              name: BILLING_REPLICA,
              type: 'postgres',
              url: options.billingUrl,
              logging: false,
              extra: { application_name: 'awa-replica' },
            }),
          ]
        : []),
      ScheduleModule.forRoot(),
      ...(options.modules ?? [AwaModule.forRoot(FAST_OPTIONS), billingModule()]),
      ...(options.imports ?? []),
    ],
    providers: options.providers ?? [MailHandlers, InvoiceHandlers],
  }).compile();
  return initOrClose(moduleRef);
}
