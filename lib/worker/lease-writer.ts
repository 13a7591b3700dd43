import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaMessages, JobValueMessages } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { flowSql, workerSql } from '../sql/index.js';
import type { SqlStatement, SqlValues } from '../sql/sql-statement.js';
import { dependencyResults } from '../sql/workflow.sql.js';
import type { DependencyReader } from './dependency-results.js';
import { completeWithSteps, encodeSteps, type EncodedSteps } from './step-completion.js';
import { AwaExplorer } from '../awa.explorer.js';
import type { GraphJob, GraphOptions } from '../interfaces/job.interface.js';
import { DEFAULT_QUEUE } from '../awa.constants.js';
import { MicroBatcher, type BatchCallback } from '../util/micro-batcher.js';
import { SerialLane } from '../util/serial-lane.js';
import { leaseKey, type InFlightJob, type ProgressSink } from './in-flight-job.js';
import { encodeOutput, held, heldBut, refusedData, snoozeOf } from './job-result.js';
import { JobTransactions } from './job-transaction.js';
import { LeaseConnection } from './lease-connection.js';

/**
 * Connections a heartbeat tick spreads its chunks over. The server's per-row work dominates a tick
 * (a few ms per 500 leases); two transactions side by side roughly halve it on a 2-core server
 * while leaving the rest of the pool to claims and results.
 */
const HEARTBEAT_CONNECTIONS = 2;

/** What a heartbeat tick learned: leases gone (rescued), and held leases with a cancel request. */
export interface HeartbeatResult {
  lost: Set<string>;
  cancelRequested: Set<string>;
}

export interface FailRequest {
  job: InFlightJob;
  error: string;
  retryBaseDelay: number;
  retryMaxDelay: number;
}

/**
 * Every write to this instance's leases: completions and failures (batched, one `unnest`
 * statement per flush), releases and heartbeats. All are fenced on (job_id, run_lease), and all
 * go through one serial lane, so the instance never deadlocks with itself on its own lease rows.
 */
@Injectable()
export class LeaseWriter implements ProgressSink, OnApplicationShutdown {
  private readonly lane = new SerialLane();
  /** The batched writes' own connection (direct mode), else the pool: see LeaseConnection. */
  private readonly connection: LeaseConnection;
  private readonly logger = new Logger('AwaLeaseWriter');
  private readonly completions = new MicroBatcher<InFlightJob, boolean>((jobs) =>
    this.persist(() => this.writeCompletions(jobs)),
  );
  private readonly failures = new MicroBatcher<FailRequest, JobState | null>((reqs) =>
    this.persist(() => this.writeFailures(reqs)),
  );
  private readonly snoozes = new MicroBatcher<InFlightJob, boolean>((jobs) =>
    this.persist(() => this.writeSnoozes(jobs)),
  );
  /** Progress is best effort: one write per job per flush (the latest value), never retried. */
  private readonly progress = new MicroBatcher<InFlightJob, void>((jobs) => this.writeProgressBatch(jobs));
  private readonly starts = new MicroBatcher<{ job: InFlightJob; deadlineMs: number }, void>((reqs) =>
    this.writeStarts(reqs),
  );

  /** job.transaction(): not batched, one transaction of the DataSource each. */
  readonly transactions: JobTransactions;

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
    private readonly explorer: AwaExplorer,
  ) {
    this.transactions = new JobTransactions(db, options);
    this.connection = new LeaseConnection(db, options);
  }

  /** Ends the lease connection once the last results are written (WorkerService.stop), or at shutdown. */
  closeConnection(): void {
    this.connection.close();
  }

  onApplicationShutdown(): void {
    this.closeConnection();
  }

  /** A batched write, on the lease connection when it is free, else on the pool. */
  private write<P extends unknown[], R>(sql: SqlStatement<P, R>, ...[values]: SqlValues<NoInfer<P>>): Promise<R[]> {
    const args = [values] as SqlValues<NoInfer<P>>;
    return this.connection.query(sql, ...args) ?? this.db.query(sql, ...args);
  }

  get maxProgressBytes(): number {
    return this.options.maxProgressBytes;
  }

  /** job.addSteps(): checked now, as enqueueGraph checks, written with the completion. */
  encodeSteps(jobs: ReadonlyArray<GraphJob>, options: Pick<GraphOptions, 'onDependencyFailure'>): EncodedSteps {
    return encodeSteps(jobs, options, this.options, (kind) => this.explorer.handlerQueue(kind) ?? DEFAULT_QUEUE);
  }

  /** A completion with steps: its own transaction, out of the batch (see completeWithSteps). */
  private completeWithSteps(job: InFlightJob, steps: EncodedSteps): Promise<boolean> {
    if (job.returned !== undefined) encodeOutput(job, this.options.maxOutputBytes);
    return this.persist(() => this.lane.run(() => completeWithSteps(this.db, job, steps)));
  }

  /** job.dependencyResults(): a read, outside the lane (it writes nothing). */
  readonly dependencies: DependencyReader = (id, after, limit) => this.db.query(dependencyResults, [id, after, limit]);

  /**
   * Writes what the handler returned (`job.returned`): its output on completion, or a snooze.
   * Resolves true if written, false if the lease was no longer held. Pending progress goes first.
   */
  complete(job: InFlightJob): Promise<boolean> {
    return new Promise((resolve, reject) =>
      this.completeWith(job, (_job, held, failure) => (failure ? reject(failure.reason) : resolve(held!))),
    );
  }

  /**
   * complete() on a callback, for the common end (see AttemptResults.complete): `done` gets whether
   * the lease was still held, or the failure. No promise per job where the write is batched.
   */
  completeWith(job: InFlightJob, done: BatchCallback<InFlightJob, boolean>): void {
    if (job.progressWritten) void job.progressWritten.then(() => this.completeNow(job, done));
    else this.completeNow(job, done);
  }

  private completeNow(job: InFlightJob, done: BatchCallback<InFlightJob, boolean>): void {
    if (job.steps && !snoozeOf(job)) {
      this.completeWithSteps(job, job.steps).then(
        (held) => done(job, held, undefined),
        (reason: unknown) => done(job, undefined, { reason }),
      );
      return;
    }
    if (job.returned === undefined) return this.completions.pushWith(job, done);
    if (snoozeOf(job)) return this.snoozes.pushWith(job, done);
    encodeOutput(job, this.options.maxOutputBytes);
    this.completions.pushWith(job, done);
  }

  /** @internal Queues a write of the latest `job.progress()` value (see InFlightJob.reportProgress). */
  writeProgress(job: InFlightJob): Promise<void> {
    return this.progress.push(job).catch((error: unknown) => {
      this.logger.warn(AwaMessages.operationFailed(`writing the progress of job ${job.id}`, String(error)));
    });
  }

  /** Resolves with the new state (retryable or failed), or null if the lease was no longer held. */
  fail(request: FailRequest): Promise<JobState | null> {
    const { progressWritten } = request.job;
    if (progressWritten) return progressWritten.then(() => this.failures.push(request));
    return this.failures.push(request);
  }

  /**
   * Gives attempts back (see workerSql.releaseJobs: a cancel request ends them cancelled, and
   * repeated shutdown releases of a started attempt spend it). Returns the ids that were released.
   */
  release(jobs: InFlightJob[], reason: string, started: boolean): Promise<string[]> {
    if (jobs.length === 0) return Promise.resolve([]);
    const retry = jobs.map((j) => this.options.queues.get(j.row.queue));
    return this.persist(async () => {
      const rows = await this.lane.run(() =>
        this.write(workerSql.releaseJobs, [
          jobs.map((j) => j.id),
          jobs.map((j) => j.runLease),
          reason,
          jobs.map(() => started),
          retry.map((q) => q?.retryBaseDelay ?? 1_000),
          retry.map((q) => q?.retryMaxDelay ?? 86_400_000),
        ]),
      );
      return rows.map((r) => r.id);
    });
  }

  /**
   * Moves the lease deadline of an attempt that starts after a wait in the buffer to now() +
   * `deadlineMs` (batched). Not retried: the claim's deadline left room for a failure (see
   * bufferWaitLimit); past it, maintenance ends the attempt as past its deadline.
   */
  start(job: InFlightJob, deadlineMs: number): void {
    this.starts
      .push({ job, deadlineMs })
      .catch((error: unknown) =>
        this.logger.warn(
          AwaMessages.operationFailed(`moving the deadline of job ${job.id} to its start`, String(error)),
        ),
      );
  }

  /** Finalizes a cancelled attempt; resolves false if its lease was no longer held. */
  cancel(job: InFlightJob, reason: string): Promise<boolean> {
    return this.persist(async () => {
      const rows = await this.lane.run(() =>
        this.write(workerSql.cancelRunningJobs, [[job.id], [job.runLease], reason]),
      );
      return rows.length > 0;
    });
  }

  /**
   * Gives a backed-off attempt back unspent and holds its queue (or key) for `retryAfterMs` (see
   * flowSql.rateLimitJob). Resolves with the job's new state, or null if the lease was no longer held.
   */
  rateLimit(job: InFlightJob, retryAfterMs: number, flow: boolean, keyed: boolean): Promise<string | null> {
    return this.persist(async () => {
      const rows = await this.lane.run(() =>
        this.write(flowSql.rateLimitJob, [job.id, job.runLease, retryAfterMs, flow, keyed]),
      );
      return rows[0]?.state ?? null;
    });
  }

  /**
   * Refreshes the heartbeats of leases, one statement per chunk, and returns the keys of those no
   * longer held. The chunks are shared out over HEARTBEAT_CONNECTIONS transactions that run side by
   * side (they touch disjoint rows, so they never wait on each other); each commits once.
   */
  heartbeat(chunks: InFlightJob[][]): Promise<HeartbeatResult> {
    return this.lane.run(async () => {
      const lost = new Set<string>();
      const cancelRequested = new Set<string>();
      const connections = Math.min(HEARTBEAT_CONNECTIONS, chunks.length);
      const transactions = Array.from({ length: connections }, (_, first) =>
        this.db.transaction(async (client) => {
          await AwaDatabase.queryOn(client, workerSql.pinKeyLookups);
          for (let i = first; i < chunks.length; i += connections) {
            const jobs = chunks[i]!;
            const rows = await AwaDatabase.queryOn(client, workerSql.heartbeatLeases, [
              jobs.map((j) => j.id),
              jobs.map((j) => j.runLease),
            ]);
            for (const r of rows) (r.lost ? lost : cancelRequested).add(leaseKey(r.job_id, r.run_lease));
          }
        }),
      );
      // Wait for all before leaving the lane, even when one fails: none may overlap the next write.
      const failed = (await Promise.allSettled(transactions)).find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      return { lost, cancelRequested };
    });
  }

  private async writeStarts(requests: Array<{ job: InFlightJob; deadlineMs: number }>): Promise<void[]> {
    await this.lane.run(() =>
      this.write(workerSql.startLeases, [
        requests.map((r) => r.job.id),
        requests.map((r) => r.job.runLease),
        requests.map((r) => r.deadlineMs),
      ]),
    );
    return requests.map(() => undefined);
  }

  private async writeCompletions(jobs: InFlightJob[]): Promise<boolean[]> {
    const ids = jobs.map((j) => j.id);
    const leases = jobs.map((j) => j.runLease);
    // The common batch, where no handler returned a value, keeps the plain statement; outside
    // workflows, without their step.
    if (!jobs.some((j) => j.returned !== undefined)) {
      const completion = jobs.some((j) => j.row.workflow_id !== null)
        ? workerSql.completeJobs
        : workerSql.completeJobsOutsideWorkflows;
      return heldBut(jobs, await this.lane.run(() => this.write(completion, [ids, leases])));
    }
    const withOutput = () =>
      this.write(workerSql.completeJobsWithOutput, [
        ids,
        leases,
        jobs.map((j) => j.outputJson ?? null),
        jobs.map((j) => j.outputNote ?? null),
      ]);
    try {
      return held(jobs, await this.lane.run(withOutput));
    } catch (error) {
      // JSON the server refuses (e.g. nested deeper than its stack allows) must not fail the batch
      // again and again: write the jobs one by one, and complete the one refused without output.
      const [only] = jobs;
      if (!refusedData(error) || (jobs.length === 1 && only!.outputJson === undefined)) throw error;
      if (jobs.length > 1) {
        const results: boolean[] = [];
        for (const job of jobs) results.push(...(await this.writeCompletions([job])));
        return results;
      }
      only!.outputJson = undefined;
      only!.outputNote = JobValueMessages.outputRefused(String(error));
      return held(jobs, await this.lane.run(withOutput));
    }
  }

  private async writeSnoozes(jobs: InFlightJob[]): Promise<boolean[]> {
    const caps = jobs.map((j) => this.options.queues.get(j.row.queue)?.maxSnoozes ?? 0);
    const rows = await this.lane.run(() =>
      this.write(workerSql.snoozeJobs, [
        jobs.map((j) => j.id),
        jobs.map((j) => j.runLease),
        jobs.map((j) => snoozeOf(j)!.delayMs),
        caps,
        caps.map((max) => JobValueMessages.snoozeCapReached(max)),
      ]),
    );
    return held(jobs, rows);
  }

  private async writeProgressBatch(jobs: InFlightJob[]): Promise<void[]> {
    const batch: InFlightJob[] = [];
    const values: string[] = [];
    for (const job of jobs) {
      if (job.progressJson === undefined) continue;
      batch.push(job);
      values.push(job.progressJson);
      job.progressJson = undefined; // a later progress() queues the next write
    }
    const write = (from: number, to: number) =>
      this.lane.run(() =>
        this.write(workerSql.writeProgress, [
          batch.slice(from, to).map((j) => j.id),
          batch.slice(from, to).map((j) => j.runLease),
          values.slice(from, to),
        ]),
      );
    try {
      if (batch.length > 0) await write(0, batch.length);
    } catch (error) {
      // One value the server refuses must not cost the others theirs: write them one by one.
      if (!refusedData(error) || batch.length === 1) throw error;
      for (let i = 0; i < batch.length; i++) {
        await write(i, i + 1).catch((one: unknown) =>
          this.logger.warn(AwaMessages.operationFailed(`writing the progress of job ${batch[i]!.id}`, String(one))),
        );
      }
    }
    return jobs.map(() => undefined);
  }

  private async writeFailures(requests: FailRequest[]): Promise<Array<JobState | null>> {
    const rows = await this.lane.run(() =>
      this.write(workerSql.failJobs, [
        requests.map((r) => r.job.id),
        requests.map((r) => r.job.runLease),
        requests.map((r) => r.error),
        requests.map((r) => r.retryBaseDelay),
        requests.map((r) => r.retryMaxDelay),
      ]),
    );
    const states = new Map(rows.map((r) => [leaseKey(r.id, r.run_lease), r.state]));
    return requests.map((r) => states.get(r.job.key) ?? null);
  }

  /**
   * A result must not be lost to a passing database fault: retry with backoff for as long as the
   * lease could still be ours (heartbeatStaleAfter). Past that, maintenance rescues the attempt.
   */
  private async persist<T>(write: () => Promise<T>): Promise<T> {
    const giveUpAt = performance.now() + this.options.heartbeatStaleAfter;
    for (let delay = 50; ; delay = Math.min(delay * 2, 2_000)) {
      try {
        return await write();
      } catch (error) {
        if (performance.now() + delay >= giveUpAt) throw error;
        this.logger.warn(AwaMessages.operationFailed('writing job results (will retry)', String(error)));
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }
}
