import {
  applyDecorators,
  Body,
  Controller,
  Delete,
  Get,
  Header,
  HttpCode,
  Param,
  Post,
  Query,
  Req,
  UseFilters,
  UseGuards,
  UnsupportedMediaTypeException,
  type Type,
} from '@nestjs/common';
// Bundled from dashboard-ui/ by dashboard-ui/build.mjs (npm run build), git-ignored.
import { DASHBOARD_CSS, DASHBOARD_JS } from './dashboard.assets.generated.js';
import { DashboardExceptionFilter } from './dashboard-exception.filter.js';
import { refuseCrossSite } from './dashboard.csrf.js';
import { parseBulk, parseFilter, parseJobId, parsePage, parseWorkflowId } from './dashboard.input.js';
import { renderPage, type DashboardPage } from './dashboard.html.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { DashboardService } from './dashboard.service.js';
import { AwaDashboardMessages } from './dashboard.messages.js';

/** The parts of an Express or Fastify request the controller reads. */
interface HttpRequest {
  originalUrl?: string;
  url?: string;
  headers: Record<string, string | string[] | undefined>;
}

const HTML = 'text/html; charset=utf-8';
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'";

/** A GET route answering with an HTML page, under a strict content security policy (own assets only). */
const HtmlPage = (route?: string) =>
  applyDecorators(Get(route), Header('content-type', HTML), Header('content-security-policy', CSP));

/** The URL prefix the dashboard is served under, from a page's URL and that page's depth below it. */
function baseOf(request: HttpRequest, depth: number): string {
  const path = (request.originalUrl ?? request.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
  const segments = path.split('/');
  return segments.slice(0, segments.length - depth).join('/');
}

/**
 * Actions come from the dashboard's own origin only (see refuseCrossSite), and need a JSON body: a
 * cross-site form cannot send one without a CORS preflight.
 */
function checkAction(request: HttpRequest): void {
  refuseCrossSite(request.headers);
  const type = String(request.headers['content-type'] ?? '');
  if (!type.toLowerCase().startsWith('application/json'))
    throw new UnsupportedMediaTypeException(AwaDashboardMessages.notJson());
}

/**
 * The dashboard's controller, made for one path prefix (a controller's path is fixed when its class
 * is decorated), behind the given guard. Pages and assets come from memory; the JSON API is under /api.
 * @internal
 */
export function createDashboardController(options: ResolvedDashboardOptions): Type<unknown> {
  @Controller(options.path)
  @UseFilters(DashboardExceptionFilter)
  class AwaDashboardController {
    constructor(private readonly dashboard: DashboardService) {}

    private page(request: HttpRequest, page: DashboardPage, depth: number, id?: string): string {
      return renderPage({
        base: baseOf(request, depth),
        page,
        jobId: page === 'job' ? id : undefined,
        workflowId: page === 'workflow' ? id : undefined,
        query: request.url?.includes('?') ? new URLSearchParams(request.url.split('?')[1]) : new URLSearchParams(),
        readOnly: options.readOnly,
        refreshInterval: options.refreshInterval,
      });
    }

    @HtmlPage()
    overviewPage(@Req() request: HttpRequest) {
      return this.page(request, 'overview', 0);
    }

    @HtmlPage('jobs')
    jobsPage(@Req() request: HttpRequest) {
      return this.page(request, 'jobs', 1);
    }

    @HtmlPage('jobs/:id')
    jobPage(@Req() request: HttpRequest, @Param('id') id: string) {
      return this.page(request, 'job', 2, parseJobId(id));
    }

    @HtmlPage('workflows/:id')
    workflowPage(@Req() request: HttpRequest, @Param('id') id: string) {
      return this.page(request, 'workflow', 2, parseWorkflowId(id));
    }

    @HtmlPage('schedules')
    schedulesPage(@Req() request: HttpRequest) {
      return this.page(request, 'schedules', 1);
    }

    @HtmlPage('instances')
    instancesPage(@Req() request: HttpRequest) {
      return this.page(request, 'instances', 1);
    }

    @Get('assets/dashboard.css')
    @Header('content-type', 'text/css; charset=utf-8')
    @Header('cache-control', 'no-cache')
    css() {
      return DASHBOARD_CSS;
    }

    @Get('assets/dashboard.js')
    @Header('content-type', 'text/javascript; charset=utf-8')
    @Header('cache-control', 'no-cache')
    js() {
      return DASHBOARD_JS;
    }

    @Get('api/queues')
    queues() {
      return this.dashboard.queues();
    }

    @Get('api/throughput')
    async throughput(@Query('queue') queue?: string) {
      return { minutes: await this.dashboard.throughput(queue || undefined) };
    }

    @Get('api/jobs')
    jobs(@Query() query: Record<string, unknown>) {
      return this.dashboard.jobs(parseFilter(query), parsePage(query));
    }

    @Get('api/jobs/count')
    count(@Query() query: Record<string, unknown>) {
      return this.dashboard.count(parseFilter(query));
    }

    @Get('api/jobs/:id')
    job(@Param('id') id: string, @Query('queue') queue?: string) {
      return this.dashboard.job(parseJobId(id), queue || undefined);
    }

    @Get('api/workflows/:id')
    workflow(@Param('id') id: string) {
      return this.dashboard.workflow(parseWorkflowId(id));
    }

    @Get('api/instances')
    async instances() {
      return this.dashboard.instances();
    }

    @Get('api/schedules')
    schedules() {
      return this.dashboard.schedules();
    }

    @Get('api/event-groups')
    eventGroups() {
      return this.dashboard.groups();
    }

    @Post('api/queues/:name/pause')
    @HttpCode(200)
    async pauseQueue(@Req() request: HttpRequest, @Param('name') name: string) {
      checkAction(request);
      await this.dashboard.admin((a) => a.pauseQueue(name));
      return { queue: name, paused: true };
    }

    @Post('api/queues/:name/resume')
    @HttpCode(200)
    async resumeQueue(@Req() request: HttpRequest, @Param('name') name: string) {
      checkAction(request);
      await this.dashboard.admin((a) => a.resumeQueue(name));
      return { queue: name, paused: false };
    }

    @Post('api/jobs/bulk')
    @HttpCode(200)
    bulk(@Req() request: HttpRequest, @Body() body: unknown) {
      checkAction(request);
      this.dashboard.checkWritable();
      return this.dashboard.bulk(parseBulk(body));
    }

    @Post('api/jobs/:id/retry')
    @HttpCode(200)
    retry(@Req() request: HttpRequest, @Param('id') id: string, @Query('queue') queue?: string) {
      checkAction(request);
      const jobId = parseJobId(id);
      return this.dashboard.admin((a) => a.retryJob(jobId, { queue: queue || undefined }));
    }

    @Post('api/jobs/:id/cancel')
    @HttpCode(200)
    cancel(@Req() request: HttpRequest, @Param('id') id: string, @Query('queue') queue?: string) {
      checkAction(request);
      const jobId = parseJobId(id);
      return this.dashboard.admin((a) => a.cancelJob(jobId, { queue: queue || undefined }));
    }

    @Delete('api/jobs/:id')
    @HttpCode(200)
    remove(@Req() request: HttpRequest, @Param('id') id: string, @Query('queue') queue?: string) {
      refuseCrossSite(request.headers);
      const jobId = parseJobId(id);
      return this.dashboard.admin((a) => a.deleteJob(jobId, { queue: queue || undefined }));
    }

    @Post('api/schedules/:name/pause')
    @HttpCode(200)
    pauseSchedule(@Req() request: HttpRequest, @Param('name') name: string) {
      return this.scheduleAction(request, name, 'pause');
    }

    @Post('api/schedules/:name/resume')
    @HttpCode(200)
    resumeSchedule(@Req() request: HttpRequest, @Param('name') name: string) {
      return this.scheduleAction(request, name, 'resume');
    }

    @Post('api/schedules/:name/run')
    @HttpCode(200)
    runSchedule(@Req() request: HttpRequest, @Param('name') name: string) {
      return this.scheduleAction(request, name, 'run');
    }

    private async scheduleAction(request: HttpRequest, name: string, action: 'pause' | 'resume' | 'run') {
      checkAction(request);
      await this.dashboard.schedule<unknown>((s) =>
        action === 'pause'
          ? s.pauseSchedule(name)
          : action === 'resume'
            ? s.resumeSchedule(name)
            : s.triggerSchedule(name),
      );
      return { schedule: name, action };
    }
  }
  if (options.guard) UseGuards(options.guard)(AwaDashboardController);
  return AwaDashboardController;
}
