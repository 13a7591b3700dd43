import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { AWA_OPTIONS, DEFAULT_QUEUE } from '../awa.constants.js';
import { AwaExplorer } from '../awa.explorer.js';
import { AwaMessages, RescueErrors } from '../awa.messages.js';
import { AwaRegistry, type AwaModuleEntry } from '../awa.registry.js';
import { AwaDatabase } from '../database/awa-database.js';
import { dataSourceOfManager, queryRowsWithManager } from '../database/typeorm-adapter.js';
import { EnqueueValidationError } from '../errors/enqueue-validation.error.js';
import { AwaEvents } from '../events/awa-events.js';
import type {
  CancelResult,
  EnqueueManyItem,
  EnqueueOptions,
  JobRecord,
  JobState,
} from '../interfaces/job.interface.js';
import { WORKER_WAKEUP, type WorkerWakeup } from '../interfaces/worker-wakeup.interface.js';
import type { EnqueuedFlow, EnqueuedGraph, FlowJob } from '../interfaces/workflow.interface.js';
import type { GraphJob, GraphOptions } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { handoffSql, jobsSql } from '../sql/index.js';
import { insertGraph } from '../sql/workflow.sql.js';
import type { SqlParams, SqlValues } from '../sql/sql-statement.js';
import type { JobRow } from '../sql/jobs.sql.js';
import {
  ENQUEUE_MANY_OPTION_KEYS,
  ENQUEUE_OPTION_KEYS,
  batchBytes,
  checkEnqueueOptions,
  encodeJob,
  jobObject,
  LARGE_BATCH_BYTES,
  jobsPayload,
} from './enqueue-validator.js';
import { insertWithUnique, type RunStatement, type UniqueOutcome } from './unique-insert.js';
import { HandoffConnection } from './handoff-connection.js';
import { handsOff } from './handoff-rules.js';
import { graphUniqueConflict, uniqueKeysOf } from './workflow-unique.js';
import { WorkflowMessages } from './workflow.messages.js';
import { checkGraph, flowToGraph, graphPayload } from './workflow-graph.js';

export interface EnqueuedJob {
  id: string;
  /** For a duplicate: the kind and queue of the job it is a duplicate of. */
  kind: string;
  queue: string;
  /** True when a unique job was not inserted because `id`, an existing job, holds its key. */
  duplicate: boolean;
  /** True when, in debounce mode (`unique.replace`), that waiting job took this call's args and runAt. */
  replaced: boolean;
}

/**
 * Enqueues jobs. Inject it anywhere. Pass `manager` (from `dataSource.transaction(...)`) to insert
 * inside your own transaction: the job exists, and workers are woken, only if you commit.
 * Every input is checked before the database is touched.
 */
@Injectable()
export class QueueProducer {
  /** The statements of enqueues that may hand their job to an idle worker (direct mode): see HandoffConnection. */
  private readonly handoffs: HandoffConnection;

  /** @internal The module builds it; its parameters are the queue's internals. */
  constructor(
    private readonly db: AwaDatabase,
    private readonly explorer: AwaExplorer,
    @Inject(WORKER_WAKEUP) private readonly workers: WorkerWakeup,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly events: AwaEvents,
    private readonly registry: AwaRegistry,
  ) {
    this.handoffs = new HandoffConnection(db, options);
  }

  /**
   * @internal Nest's OnApplicationShutdown (not declared: the published types leave internals out).
   * Ends the handoff connection, after every module's beforeApplicationShutdown (workers drained):
   * an enqueue after this goes through the pool, and one running on it ends first.
   */
  onApplicationShutdown(): void {
    this.handoffs.close();
  }

  /**
   * Enqueues one job. Without `queue`, it goes to the queue of this app's handler for `kind`,
   * or to 'default' if this app has none.
   */
  async enqueue<TArgs = unknown>(kind: string, args: TArgs, options: EnqueueOptions = {}): Promise<EnqueuedJob> {
    checkEnqueueOptions(options, ENQUEUE_OPTION_KEYS);
    const { manager, ...jobOptions } = options;
    const [job] = await this.insert([{ ...jobOptions, kind, args }], manager, true);
    return job!;
  }

  /** Enqueues many jobs in one statement; all or none. Returns them in input order. */
  async enqueueMany<TArgs = unknown>(
    items: ReadonlyArray<EnqueueManyItem<TArgs>>,
    options: { manager?: EntityManager } = {},
  ): Promise<EnqueuedJob[]> {
    if (!Array.isArray(items)) throw new EnqueueValidationError('items', AwaMessages.enqueueManyNotArray());
    checkEnqueueOptions(options, ENQUEUE_MANY_OPTION_KEYS);
    if (items.length === 0) return [];
    return this.insert(items, options.manager);
  }

  /**
   * Enqueues a workflow (docs/workflows.md): jobs that wait for others (`dependsOn`, by ref), in one
   * statement, so all or none (in the caller's transaction with `manager`). A job with dependencies
   * is `waiting` until they have all ended. Checked before the database: refs, dependsOn, cycles,
   * size (MAX_GRAPH_JOBS), and every enqueue option per job. A unique job whose key another job holds
   * refuses the whole graph (UniqueConflictError naming its ref): nothing is inserted.
   */
  async enqueueGraph<TArgs = unknown>(
    jobs: ReadonlyArray<GraphJob<TArgs>>,
    options: GraphOptions = {},
  ): Promise<EnqueuedGraph> {
    const graph = checkGraph(jobs, options, { unique: true });
    // A workflow lives in one database: its jobs' queues must belong to one module.
    const owner = this.route(
      graph.items,
      (first, second) => new EnqueueValidationError('jobs', WorkflowMessages.graphSpansModules(first, second)),
    );
    if (owner) return owner.get(QueueProducer).enqueueGraph(jobs, options);
    const { manager } = options;
    this.checkManager(manager, graph.items);
    const encoded = graph.items.map((item, i) => encodeJob(item, this.options, (kind) => this.defaultQueue(kind), i));
    const run = this.runner(manager);
    const workflowId = randomUUID();
    const kinds = encoded.map((e, i) => ({ kind: graph.items[i]!.kind, queue: e.queue }));
    const keys = uniqueKeysOf(graph.refs, encoded);
    const rows = await this.events.send(kinds, (traceparent) =>
      run(insertGraph, [
        graphPayload(encoded, graph.waitingOn, traceparent),
        workflowId,
        JSON.stringify(graph.edges),
      ]).catch((error: unknown) => {
        throw keys.size > 0 ? graphUniqueConflict(error, keys) : error;
      }),
    );
    this.events.emit({ type: 'enqueued', jobs: kinds });
    if (!manager) for (const queue of new Set(encoded.map((e) => e.queue))) this.workers.wake(queue);
    return { workflowId, ids: Object.fromEntries(graph.refs.map((ref, i) => [ref, rows[i]!.id])) };
  }

  /**
   * Enqueues a tree as a workflow: each job waits for its `children`, which run first (any depth).
   * Built on enqueueGraph (same options and checks); returns the root's id as `id`.
   */
  async enqueueFlow<TArgs = unknown>(root: FlowJob<TArgs>, options: GraphOptions = {}): Promise<EnqueuedFlow> {
    const { jobs, rootRef } = flowToGraph(root as FlowJob);
    const graph = await this.enqueueGraph(jobs, options);
    return { ...graph, id: graph.ids[rootRef]! };
  }

  /**
   * A job as stored, or null. With several AwaModules, pass the job's `queue` to read it from that
   * queue's database; without it, in the default module's (job ids are per database).
   */
  async getJob<TArgs = unknown>(id: string, where: JobLocation = {}): Promise<JobRecord<TArgs> | null> {
    const owner = this.moduleOfQueue(where);
    if (owner) return owner.get(QueueProducer).getJob<TArgs>(id);
    if (!isJobId(id)) return null;
    const [row] = await this.db.query(jobsSql.getJob, [id]);
    return row ? toRecord<TArgs>(row) : null;
  }

  /**
   * Cancels a job. A job that is waiting (scheduled, available, retryable) is `cancelled` at once.
   * A running job gets a cancel request stored on its attempt: its handler's `job.signal` aborts on
   * whichever instance runs it (NOTIFY, else its next heartbeat), and however the attempt ends
   * (settled, released, rescued) the job ends `cancelled`. A finished job is left as it is.
   * With several AwaModules, pass the job's `queue` (as for getJob).
   */
  async cancel(id: string, where: JobLocation = {}): Promise<CancelResult> {
    const owner = this.moduleOfQueue(where);
    if (owner) return owner.get(QueueProducer).cancel(id);
    if (!isJobId(id)) return { outcome: 'not-found' };
    // The job may change state between the two statements (claimed, or its attempt ended): retry.
    for (let round = 0; ; round++) {
      const [waiting] = await this.db.query(jobsSql.cancelWaitingJob, [id, RescueErrors.cancelled]);
      if (waiting) {
        this.events.emit({ type: 'cancelled', jobs: [waiting] });
        return { outcome: 'cancelled', previousState: waiting.previous_state };
      }
      const [current] = await this.db.query(jobsSql.requestCancel, [id]);
      if (!current) return { outcome: 'not-found' };
      if (current.signalled) return { outcome: 'signalled', previousState: 'running' };
      if (FINISHED.has(current.state) || round >= 5) return { outcome: 'already-finished', state: current.state };
    }
  }

  /** `single`: from enqueue, whose errors carry no item index. */
  private async insert(
    items: ReadonlyArray<EnqueueManyItem>,
    manager: EntityManager | undefined,
    single = false,
  ): Promise<EnqueuedJob[]> {
    const owner = this.route(items);
    if (owner) return owner.get(QueueProducer).insert(items, manager, single);
    this.checkManager(manager, items);
    const encoded = items.map((item, i) =>
      encodeJob(item, this.options, (kind) => this.defaultQueue(kind), single ? undefined : i),
    );
    const large = batchBytes(encoded) >= LARGE_BATCH_BYTES;
    const run = this.runner(manager);
    // No observer (telemetry): no event objects, one per job, to build (send ignores `jobs` then).
    const jobs = this.events.observed ? encoded.map((e, i) => ({ kind: items[i]!.kind, queue: e.queue })) : [];
    // One job that runs now, not in the caller's transaction: to an idle worker, if one offers (docs/handoff.md).
    const handoff = single && !manager && handsOff(encoded[0]!, this.options);
    let handed = false;
    const outcomes: UniqueOutcome[] = await this.events.send(jobs, async (traceparent) => {
      if (encoded.some((e) => e.unique)) return insertWithUnique(run, encoded, traceparent);
      if (handoff) {
        const e = encoded[0]!;
        const params: SqlParams<typeof handoffSql.insertHandedOff> = [
          items[0]!.kind, // e.kind is its JSON text
          e.queue,
          e.args,
          e.priority,
          e.maxAttempts,
          e.tags || null,
          traceparent ?? null,
        ];
        const eager = this.options.queues.get(e.queue)?.handoff === 'eager';
        const [row] = await (this.handoffs.insertHandedOff(params, eager) ?? run(handoffSql.insertHandedOff, params));
        handed = row!.handed;
        return [{ id: row!.id, duplicate: false, replaced: false }];
      }
      const rows = large
        ? await run(jobsSql.insertJobsLarge, [`[${encoded.map((e) => jobObject(e, traceparent)).join(',')}]`])
        : await run(jobsSql.insertJobs, [jobsPayload(encoded, traceparent)]);
      return rows.map((row) => ({ id: row.id, duplicate: false, replaced: false }));
    });
    if (this.events.listening)
      this.events.emit({ type: 'enqueued', jobs: jobs.filter((_, i) => !outcomes[i]!.duplicate) });
    // A handed job is its worker's already: a local worker woken for it would claim nothing.
    if (!manager && !handed) {
      // Committed already: wake local workers now instead of waiting for our own NOTIFY.
      for (const queue of new Set(encoded.map((e) => e.queue))) this.workers.wake(queue);
    }
    return outcomes.map((o, i) => ({
      id: o.id,
      kind: o.kind ?? items[i]!.kind,
      queue: o.queue ?? encoded[i]!.queue,
      duplicate: o.duplicate,
      replaced: o.replaced,
    }));
  }

  /** Runs statements in the caller's transaction (`manager`), else on the pool. */
  private runner(manager: EntityManager | undefined): RunStatement {
    // db.query's spread parameter is a conditional type a generic P cannot be matched against: hence the cast.
    return (sql, values) =>
      manager ? queryRowsWithManager(manager, sql, values) : this.db.query(sql, ...([values] as SqlValues<never>));
  }

  private defaultQueue(kind: string): string {
    return this.explorer.handlerQueue(kind) ?? DEFAULT_QUEUE;
  }

  /**
   * Another AwaModule that all `items` go to (by their queue), to hand them to; undefined when they
   * are this module's. Jobs of two modules are refused: one call is one statement, in one database.
   */
  private route(
    items: ReadonlyArray<EnqueueManyItem>,
    spans = (first: string, second: string): Error =>
      new EnqueueValidationError('items', AwaMessages.enqueueManySpansModules(first, second)),
  ): AwaModuleEntry | undefined {
    return this.registry.handOff(
      items.map((item) => this.queueOf(item)),
      this.options.name,
      spans,
    );
  }

  /** The queue an item goes to, before it is checked (anything but a string matches no module). */
  private queueOf(item: EnqueueManyItem | undefined): string {
    const queue: unknown = item?.queue ?? this.defaultQueue(item?.kind as string);
    return typeof queue === 'string' ? queue : '';
  }

  /** Refuses a `manager` that is not an EntityManager of this module's DataSource, before any statement. */
  private checkManager(manager: EntityManager | undefined, items: ReadonlyArray<EnqueueManyItem>): void {
    if (manager === undefined || (manager && dataSourceOfManager(manager) === this.db.dataSource)) return;
    const entry = this.registry.named(this.options.name);
    if (!manager || !dataSourceOfManager(manager) || this.registry.modules.length < 2 || !entry)
      throw new EnqueueValidationError('manager', AwaMessages.enqueueManagerInvalid());
    const queue = this.queueOf(items[0]);
    throw new EnqueueValidationError('manager', AwaMessages.enqueueManagerOtherDatabase(queue, entry.label));
  }

  /** The other module that `where.queue` belongs to (no queue: the default module), if not this one. */
  private moduleOfQueue(where: JobLocation): AwaModuleEntry | undefined {
    const queue = where !== null && typeof where === 'object' ? where.queue : undefined;
    return this.registry.handOff([queue], this.options.name, () => new Error('unreachable: one queue'));
  }
}

/** Where a job is, for getJob and cancel when the app runs several AwaModules. */
export interface JobLocation {
  /** The job's queue: the job is looked up in the database of the module that declares it. */
  queue?: string;
}

const FINISHED: ReadonlySet<JobState> = new Set(['completed', 'failed', 'cancelled']);
const BIGINT_MAX = 9_223_372_036_854_775_807n;

/** Whether `id` can name a job: digits that fit a bigint (a larger one would make PostgreSQL throw). */
function isJobId(id: unknown): boolean {
  const text = String(id);
  return /^\d{1,19}$/.test(text) && BigInt(text) <= BIGINT_MAX;
}

/** A job row as the public JobRecord. */
export function toRecord<TArgs>(row: JobRow): JobRecord<TArgs> {
  return {
    id: row.id,
    kind: row.kind,
    queue: row.queue,
    args: row.args as TArgs,
    state: row.state,
    priority: row.priority,
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    createdAt: row.created_at,
    attemptedAt: row.attempted_at,
    finalizedAt: row.finalized_at,
    errors: row.errors,
    runLease: row.run_lease,
    tags: row.tags,
    uniqueKey: row.unique_key,
    snoozes: row.snoozes,
    progress: row.progress,
    output: row.output,
    workflowId: row.workflow_id,
  };
}
