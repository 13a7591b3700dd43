import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaExplorer } from '../awa.explorer.js';
import { AwaRegistry } from '../awa.registry.js';
import { AWA_READ_DATABASE, AwaDatabase } from '../database/awa-database.js';
import type { CancelResult, JobRecord } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { QueueProducer, type JobLocation } from '../producer/queue-producer.js';
import { adminSql } from '../sql/index.js';
import { WorkerService } from '../worker/worker.service.js';
import { checkText, checkWorkflowId, compileFilter, type JobFilter } from './job-filter.js';
import { cancelMatching, deleteMatching, retryMatching } from './queue-admin.bulk.js';
import { countMatching, deleteOneJob, listJobPage, readJob, retryOneJob } from './queue-admin.jobs.js';
import { readKeyPage, setKeyLimit } from './queue-admin.keys.js';
import { QUEUE_NAME_MAX } from './queue-admin.limits.js';
import { adminHandOff, filterQueues, workflowModule } from './queue-admin.routing.js';
import { readQueueCounts } from './queue-counts.js';
import {
  hasWorkflow,
  listWorkflowPage,
  readWorkflow,
  retryWorkflowJobs,
  type WorkflowListOptions,
  type WorkflowLocation,
  type WorkflowPage,
  type WorkflowView,
} from './workflow-admin.js';
import type {
  BulkDeleteResult,
  BulkResult,
  DeleteJobResult,
  JobPage,
  JobPageOptions,
  KeyPage,
  KeyPageOptions,
  QueueState,
  RetryJobResult,
} from './queue-admin.types.js';

export { BULK_BATCH_SIZE, JOB_COUNT_CAP, JOB_PAGE_DEFAULT, JOB_PAGE_MAX } from './queue-admin.limits.js';

// This class routes each call to its module and checks the call's shape; the work in one module's
// database is in queue-admin.jobs.ts, queue-admin.bulk.ts, queue-admin.keys.ts and workflow-admin.ts.

/**
 * Operates the queue: pauses and resumes queues fleet-wide, lists and counts jobs, and retries,
 * cancels or deletes one job or many by filter; sets and lists per-key concurrency limits. Inject it anywhere (AwaModule is global). Every
 * input is checked before the database is touched (AdminValidationError, naming the field).
 * With several AwaModules, a call about a queue (or a filter's `queues`, or a job's `{ queue }`) goes
 * to that queue's module, one without to the default module's; queueStates() lists every module's.
 * Its reads go to the module's readDataSource, when it has one.
 */
@Injectable()
export class QueueAdmin {
  /** @internal The module builds it. */
  constructor(
    private readonly db: AwaDatabase,
    private readonly producer: QueueProducer,
    private readonly workers: WorkerService,
    private readonly explorer: AwaExplorer,
    @Inject(AWA_READ_DATABASE) private readonly reads: AwaDatabase,
    private readonly registry: AwaRegistry,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  /**
   * Pauses a queue on every instance: no instance claims from it from now on (each claim reads
   * the pause). Running jobs finish normally; enqueueing still works. Pausing a paused queue keeps
   * its pausedAt.
   */
  async pauseQueue(name: string): Promise<void> {
    const other = this.other([name]);
    if (other) return other.pauseQueue(name);
    await this.db.query(adminSql.pauseQueue, [checkText(name, 'name', QUEUE_NAME_MAX)]);
  }

  /** Resumes a queue; every instance (NOTIFY, else its next poll) claims from it at once. */
  async resumeQueue(name: string): Promise<void> {
    const other = this.other([name]);
    if (other) return other.resumeQueue(name);
    await this.db.query(adminSql.resumeQueue, [checkText(name, 'name', QUEUE_NAME_MAX)]);
    this.workers.wake(name);
  }

  /**
   * Every queue that has jobs, was ever paused, or has a handler in this app, by name. The
   * unfinished states are counted exactly; the finished ones too while there are fewer than
   * FINISHED_EXACT_CAP (10,000) of them, and estimated past that (listed in `estimated`), so that
   * the call costs the same however many finished jobs are kept.
   */
  async queueStates(): Promise<QueueState[]> {
    if (this.registry.modules.length < 2) return this.localQueueStates();
    const all = await Promise.all(this.registry.modules.map((m) => m.get(QueueAdmin).localQueueStates()));
    return all.flat().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** queueStates() of this module's database. */
  private async localQueueStates(): Promise<QueueState[]> {
    const queues = await readQueueCounts(this.reads, [...this.explorer.kindsByQueue().keys()]);
    return queues.map((q) => ({
      name: q.name,
      paused: q.pausedAt !== null,
      pausedAt: q.pausedAt,
      counts: q.counts,
      estimated: q.estimated,
      oldestAvailableAt: q.oldestAvailableAt,
    }));
  }

  /**
   * Sets how many attempts of `key` may run at once in `queue`, over all instances, in place of the
   * queue's keyConcurrency; `null` gives the key the queue's limit back. It holds from the next
   * claim on: a raised limit lets the key's waiting jobs start at once (its queue's workers are
   * notified), a lowered one starts none of them until its running attempts are below it (running
   * ones are not touched). `0` holds the key back altogether.
   */
  async setKeyConcurrency(queue: string, key: string, limit: number | null): Promise<void> {
    const other = this.other([queue]);
    if (other) return other.setKeyConcurrency(queue, key, limit);
    await setKeyLimit(this.db, queue, key, limit);
    this.workers.wake(queue);
  }

  /**
   * The concurrency keys of `queue` that have a row in awa.flow_keys (seen lately, or with a limit
   * of their own), by key, `limit` at a time (default 50, at most 500); pass `next` as `after`.
   */
  async keyStates(queue: string, page: KeyPageOptions = {}): Promise<KeyPage> {
    const other = this.other([queue]);
    if (other) return other.keyStates(queue, page);
    return readKeyPage(this.reads, queue, page);
  }

  /** A job as stored, or null (also for a string that cannot be a job id). Several modules: see QueueProducer.getJob. */
  async getJob<T = unknown>(id: string, where: JobLocation = {}): Promise<JobRecord<T> | null> {
    const other = this.other([where?.queue]);
    if (other) return other.getJob<T>(id);
    return readJob<T>(this.reads, id);
  }

  /**
   * Jobs matching `filter`, newest first (by id), `limit` at a time (default 50, at most 500).
   * Pass the returned `next` as `after` for the next page: a keyset, so a deep page costs what
   * the first does, and jobs enqueued meanwhile never shift it.
   */
  async listJobs(filter: JobFilter, page: JobPageOptions = {}): Promise<JobPage> {
    const other = this.other(filterQueues(filter));
    if (other) return other.listJobs(filter, page);
    return listJobPage(this.reads, filter, page);
  }

  /** How many jobs match `filter`, counting no further than JOB_COUNT_CAP (100,000). */
  async countJobs(filter: JobFilter): Promise<number> {
    const other = this.other(filterQueues(filter));
    if (other) return other.countJobs(filter);
    return countMatching(this.reads, filter);
  }

  /**
   * Puts a finished (completed, failed or cancelled) job back to `available`, to run now with a
   * fresh attempt budget: attempt 0, its maxAttempts kept. Its errors stay; snoozes, progress,
   * output and finalizedAt are reset.
   */
  async retryJob(id: string, where: JobLocation = {}): Promise<RetryJobResult> {
    const other = this.other([where?.queue]);
    if (other) return other.retryJob(id);
    return retryOneJob(this.db, id, (queue) => this.workers.wake(queue));
  }

  /** Cancels a job, as QueueProducer.cancel does. */
  cancelJob(id: string, where: JobLocation = {}): Promise<CancelResult> {
    return this.producer.cancel(id, where);
  }

  /** Deletes a job that is not running; a running one is left as it is (outcome 'running'). */
  async deleteJob(id: string, where: JobLocation = {}): Promise<DeleteJobResult> {
    const other = this.other([where?.queue]);
    if (other) return other.deleteJob(id);
    return deleteOneJob(this.db, id);
  }

  /**
   * Retries every finished job matching `filter` (as retryJob), in batches of BULK_BATCH_SIZE,
   * each its own short transaction; jobs locked meanwhile by another transaction are skipped, and
   * so are unique jobs whose key another job holds (as retryJob's 'duplicate'), in the same statement.
   */
  async retryJobs(filter: JobFilter): Promise<BulkResult> {
    const other = this.other(filterQueues(filter));
    if (other) return other.retryJobs(filter);
    return retryMatching(this.db, compileFilter(filter), (queue) => this.workers.wake(queue));
  }

  /**
   * Cancels every unfinished job matching `filter`, in batches: waiting ones at once, running ones
   * by a cancel request (as cancelJob). `count` counts both.
   */
  async cancelJobs(filter: JobFilter): Promise<BulkResult> {
    const other = this.other(filterQueues(filter));
    if (other) return other.cancelJobs(filter);
    return cancelMatching(this.db, compileFilter(filter));
  }

  /** Deletes every job matching `filter` that is not running, in batches; running ones get a cancel request. */
  async deleteJobs(filter: JobFilter): Promise<BulkDeleteResult> {
    const other = this.other(filterQueues(filter));
    if (other) return other.deleteJobs(filter);
    return deleteMatching(this.db, compileFilter(filter));
  }

  /**
   * A workflow (docs/workflows.md): its state, jobs and dependency edges, or null if none of its jobs is
   * left. With several modules, looked up in each (or in `where.module`'s).
   */
  async getWorkflow(id: string, where: WorkflowLocation = {}): Promise<WorkflowView | null> {
    checkWorkflowId(id, 'workflowId');
    for (const admin of this.workflowAdmins(where, 'where')) {
      const view = await readWorkflow(admin.reads, id);
      if (view) return view;
    }
    return null;
  }

  /** Workflows, newest first, optionally in one state; a page at a time; one module's (`options.module`). */
  listWorkflows(options: WorkflowListOptions = {}): Promise<WorkflowPage> {
    const module = options !== null && typeof options === 'object' ? options.module : undefined;
    const [admin] = module === undefined ? [this.defaultAdmin()] : this.workflowAdmins({ module }, 'options');
    return listWorkflowPage(admin!.reads, options);
  }

  /**
   * Cancels every unfinished job of a workflow (as cancelJobs; their dependents resolve by their
   * policies), in the module that holds it (looked up in each, or `where.module`).
   */
  async cancelWorkflow(id: string, where: WorkflowLocation = {}): Promise<BulkResult> {
    checkWorkflowId(id, 'workflowId');
    const admin = await this.workflowOwner(id, where);
    return cancelMatching(admin.db, compileFilter({ workflowId: id }));
  }

  /**
   * Retries the failed and cancelled jobs of a workflow, in dependency order: each waits again for
   * those of its dependencies retried with it (or not ended yet). Completed jobs do not run again.
   * In the module that holds it (looked up in each, or `where.module`).
   */
  async retryWorkflow(id: string, where: WorkflowLocation = {}): Promise<{ retried: number }> {
    checkWorkflowId(id, 'workflowId');
    const admin = await this.workflowOwner(id, where);
    return retryWorkflowJobs(admin.db, id);
  }

  /** The QueueAdmins a workflow call looks in: `where.module`'s alone, else every module's, this one's first. */
  private workflowAdmins(where: WorkflowLocation, field: string): QueueAdmin[] {
    const named = workflowModule(this.registry, where, field);
    if (named) return [named.get(QueueAdmin)];
    const others = this.registry.modules.filter((m) => m.name !== this.options.name);
    return [this, ...others.map((m) => m.get(QueueAdmin))];
  }

  /** The default module's QueueAdmin (this one in a one-module app). */
  private defaultAdmin(): QueueAdmin {
    return this.registry.modules.find((m) => m.name === undefined)?.get(QueueAdmin) ?? this;
  }

  /** The QueueAdmin of the module holding workflow `id` (read on the primaries); none holds it: this one. */
  private async workflowOwner(id: string, where: WorkflowLocation): Promise<QueueAdmin> {
    const admins = this.workflowAdmins(where, 'where');
    if (admins.length === 1) return admins[0]!;
    for (const admin of admins) if (await hasWorkflow(admin.db, id)) return admin;
    return this;
  }

  /** The QueueAdmin of another module that `queues` belong to (none: the default module's), if not this one. */
  private other(queues: readonly unknown[]): QueueAdmin | undefined {
    return adminHandOff(this.registry, this.options.name, queues)?.get(QueueAdmin);
  }
}
