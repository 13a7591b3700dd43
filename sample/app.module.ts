import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { TerminusModule } from '@nestjs/terminus';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AwaModule } from 'nestjs-awa';
import { AwaDashboardModule } from 'nestjs-awa/dashboard';
import { AwaHealthModule } from 'nestjs-awa/health';
import { BillingEvents } from './billing/billing.events.js';
import { Invoice } from './billing/invoice.entity.js';
import { SampleDatabase } from './database/sample-database.service.js';
import { SampleDatabaseModule } from './database/sample-database.module.js';
import { LocalhostGuard } from './dashboard/localhost.guard.js';
import { EmailHandler } from './emails/email.handler.js';
import { HealthController } from './health/health.controller.js';
import { HousekeepingHandler } from './housekeeping/housekeeping.handler.js';
import { JobsController } from './jobs/jobs.controller.js';
import { Report } from './reports/report.entity.js';
import { ReportHandler } from './reports/report.handler.js';
import { DocumentHandlers } from './workflows/document.handlers.js';
import { WorkflowsController } from './workflows/workflows.controller.js';

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      imports: [SampleDatabaseModule],
      inject: [SampleDatabase],
      useFactory: async (database: SampleDatabase) => ({
        type: 'postgres',
        url: await database.url(),
        autoLoadEntities: true, // registers AwaEntities along with the app's own
        // Creates the sample's own table only (the awa entities opt out of synchronize). A real
        // app would use migrations for its tables too.
        synchronize: true,
      }),
    }),
    TypeOrmModule.forFeature([Report, Invoice]),
    // Once, in the root module: AwaModule schedules its heartbeat and maintenance on it.
    ScheduleModule.forRoot(),
    AwaModule.forRoot({
      migrationsRun: true, // creates the "awa" schema at boot, under an advisory lock
      queues: {
        // Emails are quick: a send still running after 30 s is presumed hung, aborted and retried.
        emails: { concurrency: 20, deadlineDuration: 30_000, maxAttempts: 3 },
        // Reports are slow: allow each attempt 10 minutes, and only 2 at once per instance.
        reports: { concurrency: 2, deadlineDuration: 600_000, maxAttempts: 5 },
      },
    }),
    // The dashboard on http://localhost:3000/awa, for requests from this machine only. Without a
    // guard it would be open to anyone who can reach the app (and says so loudly at boot).
    AwaDashboardModule.forRoot({ path: '/awa', guard: LocalhostGuard }),
    TerminusModule,
    AwaHealthModule,
  ],
  controllers: [JobsController, HealthController, WorkflowsController],
  providers: [EmailHandler, ReportHandler, HousekeepingHandler, DocumentHandlers, BillingEvents],
})
export class AppModule {}
