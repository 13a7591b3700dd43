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
import { QueueAdmin, QueueProducer, type GraphJob } from 'nestjs-awa';
import { EnqueueErrorFilter } from '../jobs/enqueue-error.filter.js';

type JsonBody = Record<string, unknown>;

@Controller('workflows')
@UseFilters(EnqueueErrorFilter)
export class WorkflowsController {
  constructor(
    private readonly producer: QueueProducer,
    private readonly admin: QueueAdmin,
  ) {}

  /**
   * {"title": "...", "to": "...", "pages"?: number}: a workflow committed at once, render each page
   * (in parallel), then merge them, then mail the document. If a page fails for good, merge and mail
   * are cancelled (the default policy), never left waiting.
   */
  @Post('document')
  @HttpCode(202)
  async document(@Body() body: JsonBody): Promise<{ workflowId: string; ids: Record<string, string> }> {
    const title = body?.title;
    const to = body?.to;
    const pages = body?.pages ?? 3;
    if (typeof title !== 'string' || title === '' || typeof to !== 'string' || to === '')
      throw new BadRequestException('title and to must be non-empty strings');
    if (!Number.isInteger(pages) || (pages as number) < 1 || (pages as number) > 50)
      throw new BadRequestException('pages must be an integer from 1 to 50');
    const refs = Array.from({ length: pages as number }, (_, i) => `page-${i + 1}`);
    const jobs: GraphJob[] = [
      ...refs.map((ref, i) => ({ ref, kind: 'document.render-page', args: { title, page: i + 1 } })),
      { ref: 'merge', kind: 'document.merge', args: { title }, dependsOn: refs },
      { ref: 'mail', kind: 'document.mail', args: { to, title }, dependsOn: ['merge'] },
    ];
    return this.producer.enqueueGraph(jobs);
  }

  /** The workflow's state, its jobs and its edges. */
  @Get(':id')
  async get(@Param('id') id: string) {
    const workflow = await this.admin.getWorkflow(id).catch(() => null);
    if (!workflow) throw new NotFoundException(`workflow ${id} not found`);
    return workflow;
  }
}
