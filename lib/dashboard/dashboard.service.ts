import { ForbiddenException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { QueueAdmin } from '../admin/queue-admin.service.js';
import type { WorkflowView } from '../admin/workflow-admin.js';
import { adminHandOff } from '../admin/queue-admin.routing.js';
import { readQueueCounts } from '../admin/queue-counts.js';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaRegistry, type AwaModuleEntry } from '../awa.registry.js';
import { AWA_READ_DATABASE, AwaDatabase } from '../database/awa-database.js';
import { JobEventGroups } from '../events/job-event-groups.service.js';
import { JOB_STATES, type JobRecord, type JobState } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { toRecord } from '../producer/queue-producer.js';
import { JobSchedules } from '../schedules/job-schedules.service.js';
import { jobsSql } from '../sql/index.js';
import { CHART_MINUTES, ThroughputReader } from './dashboard-throughput.js';
import * as sql from './dashboard.sql.js';
import { filterParams, type BulkRequest, type DashboardJobFilter } from './dashboard.input.js';
import { DASHBOARD_OPTIONS } from './dashboard.tokens.js';
import type { ResolvedDashboardOptions } from './dashboard.options.js';
import { AwaDashboardMessages } from './dashboard.messages.js';
import { jobLinks, type JobLinkRow } from '../sql/workflow-admin.sql.js';

/** The most dependencies, and dependents, a job page lists. */
const JOB_LINKS_MAX = 200;

/** The count shown before a bulk action stops at this many jobs. */
export const COUNT_CAP = 100_000;
/** A page of the job list (a search) examines at most this many ids, from its cursor down. */
export const SCAN_WINDOW = 25_000;
/** The count shown before a bulk action examines at most this many ids, from the newest down. */
export const COUNT_WINDOW = 100_000;

/** The lowest id of a window of `size` ids below `before` (at least 1, the first id). */
const windowFloor = (before: string, size: number): string => {
  const floor = BigInt(before) - BigInt(size);
  return String(floor > 1n ? floor : 1n);
};

export interface QueueSummary {
  name: string;
  paused: boolean;
  pausedAt: Date | null;
  counts: Record<JobState, number>;
  /** States whose count is an estimate (shown with ≈): finished states past FINISHED_EXACT_CAP. */
  estimated: JobState[];
  oldestAvailableAgeMs: number | null;
  /** Completed and failed jobs per second, over the chart's hour. */
  completedPerSecond: number;
  failedPerSecond: number;
}

export interface ThroughputBucket {
  minute: string;
  completed: number;
  failed: number;
}

const zeroCounts = (): Record<JobState, number> =>
  Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;

/**
 * The reads of the dashboard (its own statements) and its actions (QueueAdmin, JobSchedules). Those
 * come from AwaModule, which is global and always provides them. With several AwaModules the queues,
 * throughput and instances are those of every module, and a request about jobs reads the database of
 * its queue (the filter's queues, or `?queue=`), else the default module's; the reads go to each
 * module's readDataSource when it has one.
 */
@Injectable()
export class DashboardService {
  constructor(
    private readonly queueAdmin: QueueAdmin,
    private readonly jobSchedules: JobSchedules,
    @Inject(AWA_OPTIONS) private readonly awaOptions: ResolvedAwaOptions,
    @Inject(DASHBOARD_OPTIONS) readonly options: ResolvedDashboardOptions,
    private readonly registry: AwaRegistry,
  ) {}

  private readonly charts = new Map<AwaModuleEntry, ThroughputReader>();

  /** The module a request about `queues` reads from: theirs, else the default module. */
  private moduleOf(queues: readonly unknown[]): AwaModuleEntry {
    const self = this.awaOptions.name;
    return adminHandOff(this.registry, self, queues) ?? this.registry.named(self) ?? this.registry.modules[0]!;
  }

  /** The AwaDatabase of a module's reads (its readDataSource's, if set). */
  private reads(module: AwaModuleEntry): AwaDatabase {
    return module.get<AwaDatabase>(AWA_READ_DATABASE);
  }

  /** The throughput rows of every module (or of `only`). */
  private async chartRows(only?: AwaModuleEntry): Promise<sql.ThroughputRow[]> {
    const modules = only ? [only] : this.registry.modules;
    const read = (m: AwaModuleEntry) => {
      let chart = this.charts.get(m);
      if (!chart) this.charts.set(m, (chart = new ThroughputReader(this.reads(m))));
      return chart.read();
    };
    return (await Promise.all(modules.map(read))).flat();
  }

  /** Every queue with its counts (finished states estimated past FINISHED_EXACT_CAP) and its rates. */
  async queues(): Promise<QueueSummary[]> {
    const [counts, buckets] = await Promise.all([
      Promise.all(this.registry.modules.map((m) => readQueueCounts(this.reads(m), [...m.options.queues.keys()]))),
      this.chartRows(),
    ]);
    const counted = counts.flat();
    const byName = new Map<string, QueueSummary>();
    const queue = (name: string) => {
      let q = byName.get(name);
      if (!q) {
        q = {
          name,
          paused: false,
          pausedAt: null,
          counts: zeroCounts(),
          estimated: [],
          oldestAvailableAgeMs: null,
          completedPerSecond: 0,
          failedPerSecond: 0,
        };
        byName.set(name, q);
      }
      return q;
    };
    for (const c of counted)
      Object.assign(queue(c.name), {
        paused: c.pausedAt !== null,
        pausedAt: c.pausedAt,
        counts: c.counts,
        estimated: c.estimated,
        oldestAvailableAgeMs: c.oldestAvailableAgeMs,
      });
    const seconds = CHART_MINUTES * 60;
    for (const b of buckets) {
      if (b.queue === null) continue;
      const q = queue(b.queue);
      q.completedPerSecond += b.completed / seconds;
      q.failedPerSecond += b.failed / seconds;
    }
    return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Completed and failed jobs per minute over the last hour (every queue, or one), oldest first. */
  async throughput(queue?: string): Promise<ThroughputBucket[]> {
    const rows = await this.chartRows(queue === undefined ? undefined : this.moduleOf([queue]));
    const buckets = new Map<number, ThroughputBucket>();
    for (const row of rows) {
      const t = row.minute.getTime();
      const b = buckets.get(t) ?? { minute: row.minute.toISOString(), completed: 0, failed: 0 };
      buckets.set(t, b);
      if (row.queue === null || (queue !== undefined && row.queue !== queue)) continue;
      Object.assign(b, { completed: b.completed + row.completed, failed: b.failed + row.failed });
    }
    return [...buckets.values()].sort((a, b) => a.minute.localeCompare(b.minute));
  }

  /**
   * A page of jobs, newest first, below `after` (else from the newest). It examines at most
   * SCAN_WINDOW ids: when fewer than `limit` jobs match there and older jobs remain, `bounded` is
   * set and `next` is where the window stopped (the next page searches below it).
   */
  async jobs(filter: DashboardJobFilter, page: { after: string | null; limit: number }) {
    const db = this.reads(this.moduleOf(filter.queues ?? []));
    const before = page.after ?? (await this.top(db));
    const floor = windowFloor(before, SCAN_WINDOW);
    const rows = await db.query(sql.listJobs, [...filterParams(filter), before, page.limit, floor]);
    const jobs = rows.map((r) => toRecord(r));
    if (jobs.length === page.limit) return { jobs, next: jobs[jobs.length - 1]?.id ?? null, bounded: false };
    if (BigInt(floor) <= 1n) return { jobs, next: null, bounded: false };
    return { jobs, next: floor, bounded: true, window: SCAN_WINDOW };
  }

  /**
   * How many jobs match the filter, among the newest COUNT_WINDOW: `capped` when the count stopped at
   * COUNT_CAP, `bounded` when older jobs were not looked at (the count is then a lower bound).
   */
  async count(filter: DashboardJobFilter): Promise<{ count: number; capped: boolean; bounded: boolean }> {
    const db = this.reads(this.moduleOf(filter.queues ?? []));
    const floor = windowFloor(await this.top(db), COUNT_WINDOW);
    const [row] = await db.query(sql.countJobs, [...filterParams(filter), COUNT_CAP + 1, floor]);
    const count = row?.count ?? 0;
    return { count: Math.min(count, COUNT_CAP), capped: count > COUNT_CAP, bounded: BigInt(floor) > 1n };
  }

  private async top(db: AwaDatabase): Promise<string> {
    const [row] = await db.query(sql.jobsTop);
    return row?.top ?? '1';
  }

  /** A job and its lease; `queue` names the module's database it is in (default: the default module's). */
  async job(id: string, queue?: string): Promise<{ job: JobRecord; lease: sql.LeaseRow | null; links: JobLinkRow[] }> {
    const db = this.reads(this.moduleOf([queue]));
    const [row] = await db.query(jobsSql.getJob, [id]);
    if (!row) throw new NotFoundException(AwaDashboardMessages.jobNotFound(id));
    const [lease] = await db.query(sql.jobLease, [id]);
    // A workflow job's dependencies and dependents (docs/workflows.md); none for a plain job.
    const links = row.workflow_id ? await db.query(jobLinks, [id, JOB_LINKS_MAX]) : [];
    return { job: toRecord(row), lease: lease ?? null, links };
  }

  /** A workflow's jobs and edges (QueueAdmin.getWorkflow); 404 when no job of it is left. */
  async workflow(id: string): Promise<WorkflowView> {
    const view = await this.queueAdmin.getWorkflow(id);
    if (!view) throw new NotFoundException(AwaDashboardMessages.workflowNotFound(id));
    return view;
  }

  async instances(): Promise<sql.InstanceRow[]> {
    return (await Promise.all(this.registry.modules.map((m) => this.reads(m).query(sql.listInstances)))).flat();
  }

  /** Every durable-event group's position and lag, in every module's database. */
  async groups() {
    const [first] = this.registry.modules;
    return first ? first.get(JobEventGroups).groups() : [];
  }

  /** `available` stays in the answer: the page's script reads it. */
  async schedules() {
    return { available: true, schedules: await this.jobSchedules.listSchedules() };
  }

  /** Runs an action on QueueAdmin; 403 when read-only. */
  admin<T>(action: (admin: QueueAdmin) => Promise<T>): Promise<T> {
    this.checkWritable();
    return action(this.queueAdmin);
  }

  /** Runs an action on JobSchedules; 403 when read-only. */
  schedule<T>(action: (schedules: JobSchedules) => Promise<T>): Promise<T> {
    this.checkWritable();
    return action(this.jobSchedules);
  }

  bulk(request: BulkRequest) {
    return this.admin(async (admin) => {
      if (request.action === 'retry') return { action: 'retry', ...(await admin.retryJobs(request.filter)) };
      if (request.action === 'cancel') return { action: 'cancel', ...(await admin.cancelJobs(request.filter)) };
      return { action: 'delete', ...(await admin.deleteJobs(request.filter)) };
    });
  }

  checkWritable(): void {
    if (this.options.readOnly) throw new ForbiddenException(AwaDashboardMessages.readOnly());
  }
}
