import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { OnJobEvent, type JobEvent } from 'nestjs-awa';
import type { Repository } from 'typeorm';
import { Invoice } from './invoice.entity.js';

/**
 * The `billing` group: bills each rendered report once its job has completed. A durable event, not an
 * in-process one: a completion on any instance reaches it, also one that happened while this group
 * was down (it catches up from its stored position). Delivery is at least once, so the write is
 * idempotent: one invoice per job, whatever the number of deliveries.
 */
@Injectable()
export class BillingEvents {
  private readonly logger = new Logger(BillingEvents.name);

  constructor(@InjectRepository(Invoice) private readonly invoices: Repository<Invoice>) {}

  @OnJobEvent('completed', { group: 'billing', kinds: ['report.render'] })
  async bill(event: JobEvent): Promise<void> {
    await this.invoices
      .createQueryBuilder()
      .insert()
      .values({ jobId: event.jobId, kind: event.kind, eventId: event.id })
      .orIgnore()
      .execute();
    this.logger.log(`job ${event.jobId}: billed (${event.kind} completed)`);
  }
}
