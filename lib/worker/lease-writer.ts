import { Inject, Injectable, Logger } from '@nestjs/common';
import { AWA_OPTIONS } from '../awa.constants.js';
import { AwaMessages } from '../awa.messages.js';
import { AwaDatabase } from '../database/awa-database.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolver.js';
import { flowSql, workerSql } from '../sql/index.js';
import { MicroBatcher } from '../util/micro-batcher.js';
import { SerialLane } from '../util/serial-lane.js';
import { leaseKey, type InFlightJob } from './in-flight-job.js';

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
export class LeaseWriter {
  private readonly lane = new SerialLane();
  private readonly logger = new Logger('AwaLeaseWriter');
  private readonly completions = new MicroBatcher<InFlightJob, boolean>((jobs) =>
    this.persist(() => this.writeCompletions(jobs)),
  );
  private readonly failures = new MicroBatcher<FailRequest, JobState | null>((reqs) =>
    this.persist(() => this.writeFailures(reqs)),
  );
  private readonly starts = new MicroBatcher<{ job: InFlightJob; deadlineMs: number }, void>((reqs) =>
    this.writeStarts(reqs),
  );

  constructor(
    private readonly db: AwaDatabase,
    @Inject(AWA_OPTIONS) private readonly options: ResolvedAwaOptions,
  ) {}

  /** Resolves true if the attempt was completed, false if its lease was no longer held. */
  complete(job: InFlightJob): Promise<boolean> {
    return this.completions.push(job);
  }

  /** Resolves with the new state (retryable or failed), or null if the lease was no longer held. */
  fail(request: FailRequest): Promise<JobState | null> {
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
        this.db.query(workerSql.releaseJobs, [
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
        this.db.query(workerSql.cancelRunningJobs, [[job.id], [job.runLease], reason]),
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
        this.db.query(flowSql.rateLimitJob, [job.id, job.runLease, retryAfterMs, flow, keyed]),
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
          await AwaDatabase.queryOn(client, workerSql.heartbeatPlanMode);
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
      this.db.query(workerSql.startLeases, [
        requests.map((r) => r.job.id),
        requests.map((r) => r.job.runLease),
        requests.map((r) => r.deadlineMs),
      ]),
    );
    return requests.map(() => undefined);
  }

  private async writeCompletions(jobs: InFlightJob[]): Promise<boolean[]> {
    const rows = await this.lane.run(() =>
      this.db.query(workerSql.completeJobs, [jobs.map((j) => j.id), jobs.map((j) => j.runLease)]),
    );
    const done = new Set(rows.map((r) => leaseKey(r.id, r.run_lease)));
    return jobs.map((j) => done.has(j.key));
  }

  private async writeFailures(requests: FailRequest[]): Promise<Array<JobState | null>> {
    const rows = await this.lane.run(() =>
      this.db.query(workerSql.failJobs, [
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
