import {
  BadRequestException,
  Body,
  Controller,
  Get,
  HttpCode,
  NotFoundException,
  Param,
  Post,
  UseFilters,
} from '@nestjs/common';
import { QueueProducer, type EnqueueOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import type { SendEmailArgs } from '../emails/email.handler.js';
import { Report } from '../reports/report.entity.js';
import type { RenderReportArgs } from '../reports/report.handler.js';
import { EnqueueErrorFilter } from './enqueue-error.filter.js';

type JsonBody = Record<string, unknown>;

@Controller('jobs')
@UseFilters(EnqueueErrorFilter)
export class JobsController {
  constructor(
    private readonly producer: QueueProducer,
    private readonly dataSource: DataSource,
  ) {}

  /** {"to": "...", "subject": "...", "priority"?: number, "runAt"?: ISO date} */
  @Post('email')
  @HttpCode(202)
  async email(@Body() body: JsonBody): Promise<{ id: string }> {
    const args: SendEmailArgs = { to: requiredString(body, 'to'), subject: requiredString(body, 'subject') };
    // A unique job: the same mail (same args) asked for again within a minute is not sent twice; the
    // duplicate resolves to the job already queued.
    const { id } = await this.producer.enqueue('email.send', args, {
      ...scheduling(body),
      unique: { byArgs: true, period: 60_000 },
    });
    return { id };
  }

  /**
   * {"title": "...", "pages"?: number}. The report row and its job commit together or not at all:
   * `manager` puts the job in this transaction, and workers only see it after the commit.
   */
  @Post('report')
  @HttpCode(202)
  async report(@Body() body: JsonBody): Promise<{ id: string; reportId: string }> {
    const title = requiredString(body, 'title');
    const pages = body.pages ?? 4;
    if (!Number.isInteger(pages) || (pages as number) < 1 || (pages as number) > 100) {
      throw new BadRequestException('pages must be an integer from 1 to 100');
    }
    return this.dataSource.transaction(async (manager) => {
      const report = await manager.save(manager.create(Report, { title, pages: pages as number }));
      const args: RenderReportArgs = { reportId: report.id };
      const { id } = await this.producer.enqueue('report.render', args, {
        ...scheduling(body),
        manager,
        tags: ['sample'],
      });
      return { id, reportId: report.id };
    });
  }

  /** The job's state, attempts and the error of each failed attempt. */
  @Get(':id')
  async get(@Param('id') id: string) {
    const job = await this.producer.getJob(id);
    if (!job) throw new NotFoundException(`job ${id} not found`);
    const { kind, queue, state, attempt, maxAttempts, args, runAt, createdAt, attemptedAt, finalizedAt, errors } = job;
    return { id, kind, queue, state, attempt, maxAttempts, args, runAt, createdAt, attemptedAt, finalizedAt, errors };
  }
}

function requiredString(body: JsonBody, field: string): string {
  const value = body?.[field];
  if (typeof value !== 'string' || value.trim() === '')
    throw new BadRequestException(`${field} must be a non-empty string`);
  return value;
}

/** Optional priority and runAt, passed through as they are: the producer validates them. */
function scheduling(body: JsonBody): EnqueueOptions {
  return {
    ...(body?.priority !== undefined && { priority: body.priority as number }),
    ...(body?.runAt !== undefined && { runAt: new Date(body.runAt as string) }),
  };
}
