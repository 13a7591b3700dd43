import { Inject, Injectable } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaExplorer } from '../awa.explorer.js';
import { AwaDatabase } from '../database/awa-database.js';
import { AwaAssertionError } from '../errors/awa-assertion.error.js';
import { AwaOptionError } from '../errors/awa-option.error.js';
import { AwaSetupError } from '../errors/awa-setup.error.js';
import { AwaEvents } from '../events/awa-events.js';
import { claimBatch } from '../worker/queue-claim.js';
import { InstanceSession } from '../instance/instance-session.js';
import type { JobRecord, JobState } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions, ResolvedQueueOptions } from '../options/awa-options.resolved.js';
import { QueueProducer, toRecord } from '../producer/queue-producer.js';
import { fireDueSchedules } from '../schedules/schedule-fire.js';
import { findUnknownKey } from '../util/nearest-name.js';
import { attemptError, writeAttemptOutcome } from '../worker/attempt-outcome.js';
import { InFlightJob, type ClaimedJobRow } from '../worker/in-flight-job.js';
import { LeaseWriter } from '../worker/lease-writer.js';
import type {
  DrainedJob,
  DrainOptions,
  DrainResult,
  EnqueuedJobsFilter,
  FiredSchedule,
  FireSchedulesOptions,
} from './awa-testing.types.js';
import { AwaTestingMessages } from './testing.messages.js';
import * as testingSql from './testing.sql.js';

const DRAIN_KEYS = ['queue', 'kind', 'withScheduled'];
const FILTER_KEYS = ['kind', 'queue', 'args', 'states'];
const FIRE_KEYS = ['at'];
const WAITING: JobState[] = ['available', 'scheduled'];
/** Jobs `enqueuedJobs` returns at most, and `expectEnqueued` lists in its message. */
const FIND_LIMIT = 10_000;
const LISTED = 20;

/**
 * Test helpers that run jobs in the test's own process, against the real database, with the app's
 * real handlers and the queue's own fenced claim and result statements. AwaTestingModule provides
 * it (get it with `app.get(AwaTesting)`), only with `AwaModule.forRoot({ ..., testing: true })`,
 * which starts no background workers (otherwise they would race the test for the jobs).
 */
@Injectable()
export class AwaTesting {
  /** @internal AwaTestingModule builds it; it refuses to without `testing: true`. */
  constructor(
    private readonly db: AwaDatabase,
    private readonly explorer: AwaExplorer,
    private readonly writer: LeaseWriter,
    private readonly session: InstanceSession,
    private readonly producer: QueueProducer,
    private readonly events: AwaEvents,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {
    if (!options.testing) throw new AwaSetupError(AwaTestingMessages.testingOff());
  }

  /**
   * Runs the due jobs of the app's handlers, one at a time, until none is left, including the jobs
   * those jobs enqueue; resolves with what each attempt did. A handler that throws is not rethrown:
   * its job is retried or failed as in production, and the error is in the result. Claims as a
   * worker does: a paused queue, or one held by its rate limit or key concurrency, has none due.
   */
  async drain(options: DrainOptions = {}): Promise<DrainResult> {
    const targets = this.targets(options);
    const result: DrainResult = { completed: 0, failed: 0, retried: 0, cancelled: 0, jobs: [] };
    for (let ran = true; ran;) {
      ran = false;
      for (const [queue, kinds] of targets) {
        if (options.withScheduled) await this.db.query(testingSql.makeWaitingJobsDue, [queue.name, kinds]);
        const [row] = (await claimBatch(this.db, queue, kinds, 1, this.session.id)).rows;
        if (!row) continue;
        ran = true;
        const drained = await this.runAttempt(row, queue);
        result.jobs.push(drained);
        if (drained.state === 'completed') result.completed++;
        else if (drained.state === 'failed') result.failed++;
        else if (drained.state === 'retryable') result.retried++;
        else if (drained.state === 'cancelled') result.cancelled++;
      }
    }
    return result;
  }

  /**
   * Fires the schedules due at `at` (default: the database's now), as the maintenance leader does
   * (which `testing: true` never runs): one job per fire, each fire once, and each schedule moves on
   * to its next fire after `at`. Jobs of fires later than the database's clock are due now, so
   * drain() runs them. Resolves with the fires it enqueued.
   */
  async fireSchedules(options: FireSchedulesOptions = {}): Promise<FiredSchedule[]> {
    checkObject('fireSchedules', options, FIRE_KEYS);
    const { at } = options;
    if (at !== undefined && !(at instanceof Date && !Number.isNaN(at.getTime())))
      throw new AwaOptionError('at', AwaTestingMessages.fireAtInvalid());
    return fireDueSchedules(this.db, this.options, at);
  }

  /** Waiting jobs (by default available or scheduled) matching `filter`, oldest first. */
  async enqueuedJobs<TArgs = unknown>(filter: EnqueuedJobsFilter = {}): Promise<JobRecord<TArgs>[]> {
    return this.find<TArgs>(filter, FIND_LIMIT);
  }

  /**
   * Asserts that a job of `kind` (with args containing `args`, when given) is enqueued, and returns
   * the matching jobs. Throws an AwaAssertionError listing the enqueued jobs otherwise.
   */
  async expectEnqueued<TArgs = unknown>(
    kind: string,
    args?: unknown,
    filter: Omit<EnqueuedJobsFilter, 'kind' | 'args'> = {},
  ): Promise<JobRecord<TArgs>[]> {
    const found = await this.find<TArgs>({ ...filter, kind, args }, FIND_LIMIT);
    if (found.length > 0) return found;
    const enqueued = await this.find({ ...filter }, LISTED + 1);
    const lines = enqueued.slice(0, LISTED).map((j) => `#${j.id} ${j.kind} (${j.queue}, ${j.state}) ${json(j.args)}`);
    const wanted = `a job of kind "${kind}"${args === undefined ? '' : ` with args containing ${json(args)}`}`;
    throw new AwaAssertionError(AwaTestingMessages.notEnqueued(wanted, lines, enqueued.length - lines.length));
  }

  /** The (queue, kinds) pairs to drain, checked before the database is touched. */
  private targets(options: DrainOptions): Array<[ResolvedQueueOptions, string[]]> {
    checkObject('drain', options, DRAIN_KEYS);
    const byQueue = this.explorer.kindsByQueue();
    if (options.queue !== undefined && !byQueue.has(options.queue))
      throw new AwaOptionError('queue', AwaTestingMessages.unknownQueue(String(options.queue), [...byQueue.keys()]));
    const kinds = options.kind === undefined ? undefined : [options.kind].flat();
    for (const kind of kinds ?? [])
      if (!this.explorer.handlers.has(kind)) throw new AwaOptionError('kind', AwaTestingMessages.unhandledKind(kind));
    if (options.withScheduled !== undefined && typeof options.withScheduled !== 'boolean')
      throw new AwaOptionError('withScheduled', 'expected a boolean');
    const targets: Array<[ResolvedQueueOptions, string[]]> = [];
    for (const [queue, handled] of byQueue) {
      const wanted = handled.filter((kind) => !kinds || kinds.includes(kind));
      if ((options.queue === undefined || options.queue === queue) && wanted.length > 0)
        targets.push([this.options.queues.get(queue)!, wanted]);
    }
    return targets;
  }

  /** Runs one claimed attempt, writes its result as a worker does, and reads the job's new state. */
  private async runAttempt(row: ClaimedJobRow, queue: ResolvedQueueOptions): Promise<DrainedJob> {
    const job = new InFlightJob(row, this.writer);
    const handler = this.explorer.handlers.get(row.kind)!;
    this.events.emit({ type: 'started', attempt: job.observed });
    const outcome = await job.run(this.events.process(job, handler.invoke), queue.deadlineDuration, () => undefined);
    job.settled = true;
    // Nothing releases a drained attempt (no shutdown runs meanwhile, no entry gate): its end is always written.
    if (outcome.kind !== 'released' && outcome.kind !== 'unstarted')
      await writeAttemptOutcome({ writer: this.writer, events: this.events }, queue, job, outcome);
    const stored = await this.producer.getJob(row.id);
    const drained: DrainedJob = {
      id: row.id,
      kind: row.kind,
      queue: row.queue,
      attempt: row.attempt,
      state: stored!.state,
    };
    const error = attemptError(outcome);
    return error === undefined ? drained : { ...drained, error };
  }

  private async find<TArgs>(filter: EnqueuedJobsFilter, limit: number): Promise<JobRecord<TArgs>[]> {
    checkObject('filter', filter, FILTER_KEYS);
    for (const key of ['kind', 'queue'] as const)
      if (filter[key] !== undefined && typeof filter[key] !== 'string')
        throw new AwaOptionError(key, 'expected a string');
    if (filter.states !== undefined && !Array.isArray(filter.states))
      throw new AwaOptionError('states', 'expected an array of job states');
    let args: string | null = null;
    try {
      if (filter.args !== undefined) args = JSON.stringify(filter.args) ?? null;
    } catch (error) {
      throw new AwaOptionError('args', `expected a JSON value: ${String(error)}`);
    }
    const rows = await this.db.query(testingSql.findJobs, [
      filter.states ?? WAITING,
      filter.kind ?? null,
      filter.queue ?? null,
      args,
      limit,
    ]);
    return rows.map((row) => toRecord<TArgs>(row));
  }
}

function checkObject(name: string, value: unknown, known: readonly string[]): void {
  if (value === null || typeof value !== 'object') throw new AwaOptionError(name, 'expected an object');
  const unknown = findUnknownKey(value, known);
  if (unknown) throw new AwaOptionError(unknown.key, `unknown option of ${name} (known: ${known.join(', ')})`);
}

function json(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}
