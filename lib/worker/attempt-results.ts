import type { Logger } from '@nestjs/common';
import { AbortReasons, AwaMessages } from '../awa.messages.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { ResolvedQueueOptions } from '../options/awa-options.resolved.js';
import { describeThrown } from '../util/describe-error.js';
import { writeAttemptOutcome, type OutcomeSinks } from './attempt-outcome.js';
import type { AttemptOutcome, InFlightJob } from './in-flight-job.js';

/** Writes how a QueueWorker's attempts ended, and logs what an operator must hear of it. */
export class AttemptResults {
  constructor(
    private readonly sinks: OutcomeSinks,
    private readonly options: ResolvedQueueOptions,
    private readonly logger: Logger,
    /** A handler backed off: `state` is its job's new one (null: the lease was lost). */
    private readonly backedOff: (state: JobState | null, retryAfterMs: number) => void,
    /** Called once a complete()d attempt is written or given up on: one function for all of them. */
    private readonly written: (job: InFlightJob) => void,
  ) {}

  /**
   * The common end (the handler returned, no cancel request, no listener), on callbacks rather
   * than record()'s chain of promises: `written` is called once it is written or given up on.
   */
  complete(job: InFlightJob): void {
    if (job.transactionUsed) {
      void this.record(job, { kind: 'returned' }).finally(() => this.written(job));
      return;
    }
    this.sinks.writer.completeWith(job, this.completedFn);
  }

  /** One callback for every completion of the queue: no closure per job. */
  private readonly completedFn = (job: InFlightJob, held: boolean | undefined, failure?: { reason: unknown }) => {
    try {
      if (failure) this.notWritten(job, failure.reason);
      else if (!held) this.leaseLost(job);
    } finally {
      this.written(job);
    }
  };

  /** Writes the end of an attempt; resolves once it is written (or given up on). */
  async record(inFlight: InFlightJob, outcome: AttemptOutcome): Promise<void> {
    const { row } = inFlight;
    // released: shutdown gave the job back already; unstarted: attempt() gave it back (notEntered)
    if (outcome.kind === 'released' || outcome.kind === 'unstarted') return;
    try {
      const state = await writeAttemptOutcome(this.sinks, this.options, inFlight, outcome);
      if (outcome.kind === 'rateLimited') this.backedOff(state, outcome.retryAfterMs);
      if (state === null) this.leaseLost(inFlight);
      else if (outcome.kind === 'threw' && !inFlight.completedInTransaction) {
        this.logger.warn(AwaMessages.handlerThrew(row.id, row.kind, row.attempt, describeThrown(outcome.error)));
      }
    } catch (error) {
      this.notWritten(inFlight, error);
    }
  }

  /** A handler settled after its hard deadline had ended the attempt. */
  late(inFlight: InFlightJob, outcome: AttemptOutcome): void {
    this.logger.warn(
      `job ${inFlight.id} (${inFlight.row.kind}) settled (${outcome.kind}) ` +
        `after its hard deadline; the result was ignored`,
    );
  }

  private leaseLost(job: InFlightJob): void {
    this.logger.warn(AwaMessages.leaseLost(job.row.id, job.row.kind, job.row.run_lease));
    job.abort(AbortReasons.leaseLost);
  }

  /**
   * The result could not be written within heartbeatStaleAfter: once this attempt stops being
   * heartbeated (it is removed from the registry now), maintenance rescues and reruns it.
   */
  private notWritten(job: InFlightJob, error: unknown): void {
    this.logger.error(AwaMessages.operationFailed(`writing the result of job ${job.row.id}`, String(error)));
  }
}
