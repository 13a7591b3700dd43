import { Injectable, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { JobHandler, type Job } from 'nestjs-awa';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Repository } from 'typeorm';
import { Report } from './report.entity.js';

export interface RenderReportArgs {
  reportId: string;
}

@Injectable()
export class ReportHandler {
  private readonly logger = new Logger(ReportHandler.name);

  constructor(@InjectRepository(Report) private readonly reports: Repository<Report>) {}

  /** Slow work on the 'reports' queue, whose long deadline allows it. */
  @JobHandler('report.render', { queue: 'reports' })
  async render(job: Job<RenderReportArgs>): Promise<void> {
    const report = await this.reports.findOneBy({ id: job.args.reportId });
    if (!report) throw new Error(`report ${job.args.reportId} not found`);
    for (let page = 1; page <= report.pages; page++) {
      // Passing the signal ends the wait at once when the job must stop (deadline, shutdown,
      // cancel): the rejection fails this attempt and the job is retried.
      await sleep(250, undefined, { signal: job.signal });
      job.progress({ page, of: report.pages }); // coalesced: at most one write per heartbeat flush
    }
    // The report's status commits with the job's completion, or not at all: a rescued attempt that
    // renders again cannot mark it twice (docs/exactly-once.md). The billing group reacts to it.
    await job.transaction((manager) =>
      manager.update(Report, { id: report.id }, { status: 'rendered', renderedAt: new Date() }),
    );
    this.logger.log(`job ${job.id}: rendered report "${report.title}" (${report.pages} pages)`);
  }
}
