import { Injectable, Logger } from '@nestjs/common';
import { JobHandler, type Job } from 'nestjs-awa';
import { setTimeout as sleep } from 'node:timers/promises';

export interface RenderPageArgs {
  title: string;
  page: number;
}
export interface MergeArgs {
  title: string;
}
export interface MailDocumentArgs {
  to: string;
  title: string;
}

/** The steps of the document workflow (WorkflowsController): render each page, merge them, mail the result. */
@Injectable()
export class DocumentHandlers {
  private readonly logger = new Logger(DocumentHandlers.name);

  @JobHandler('document.render-page', { queue: 'reports' })
  async renderPage(job: Job<RenderPageArgs>): Promise<{ page: number; bytes: number }> {
    await sleep(100, undefined, { signal: job.signal }); // stands in for the rendering
    return { page: job.args.page, bytes: 1_000 * job.args.page };
  }

  /** Runs once every page has ended; reads their outputs (stored on the workflow's edges). */
  @JobHandler('document.merge', { queue: 'reports' })
  async merge(job: Job<MergeArgs>): Promise<{ pages: number; bytes: number }> {
    const pages = await job.dependencyResults<{ page: number; bytes: number }>();
    const bytes = pages.reduce((sum, p) => sum + (p.output?.bytes ?? 0), 0);
    this.logger.log(`job ${job.id}: merged ${pages.length} pages of "${job.args.title}"`);
    return { pages: pages.length, bytes };
  }

  @JobHandler('document.mail', { queue: 'emails' })
  async mail(job: Job<MailDocumentArgs>): Promise<{ sentTo: string }> {
    const [merged] = await job.dependencyResults<{ bytes: number }>();
    await sleep(50, undefined, { signal: job.signal }); // stands in for the SMTP call
    this.logger.log(`job ${job.id}: mailed "${job.args.title}" (${merged?.output?.bytes} bytes) to ${job.args.to}`);
    return { sentTo: job.args.to };
  }
}
