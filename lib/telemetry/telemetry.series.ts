import type { Attributes } from '@opentelemetry/api';

/** The per-job counters counted by (queue, kind) alone; `failed` also has an outcome. */
export type JobCount = 'enqueued' | 'started' | 'completed' | 'retried' | 'snoozed' | 'cancelled';

export const JOB_COUNTS: readonly JobCount[] = ['enqueued', 'started', 'completed', 'retried', 'snoozed', 'cancelled'];

/** The job's state after a failed attempt: the `outcome` of awa.job.failed. */
export type FailedOutcome = 'retryable' | 'failed';

export const FAILED_OUTCOMES: readonly FailedOutcome[] = ['retryable', 'failed'];

/**
 * @internal One (queue, kind): its attribute sets, made once and reused by every record, and its
 * counts not yet added to the SDK's counters. The SDK hashes the attributes of every record it is
 * given: a job's counts are increments here, added to the SDK in bulk (see startMetrics).
 */
export class JobSeries {
  readonly attributes: Attributes;
  readonly counts: Record<JobCount, number> = {
    enqueued: 0,
    started: 0,
    completed: 0,
    retried: 0,
    snoozed: 0,
    cancelled: 0,
  };
  readonly failed: Record<FailedOutcome, number> = { retryable: 0, failed: 0 };
  private readonly outcomes = new Map<string, Attributes>();

  constructor(queue: string, kind: string) {
    this.attributes = { queue, kind };
  }

  /** The attributes with an `outcome`. */
  withOutcome(outcome: string): Attributes {
    let attributes = this.outcomes.get(outcome);
    if (!attributes) this.outcomes.set(outcome, (attributes = { ...this.attributes, outcome }));
    return attributes;
  }
}

/** @internal The series of every (queue, kind) seen: a handful, kept for the life of the app. */
export class SeriesTable {
  private readonly byQueue = new Map<string, Map<string, JobSeries>>();

  of(queue: string, kind: string): JobSeries {
    let kinds = this.byQueue.get(queue);
    if (!kinds) this.byQueue.set(queue, (kinds = new Map()));
    let series = kinds.get(kind);
    if (!series) kinds.set(kind, (series = new JobSeries(queue, kind)));
    return series;
  }

  *all(): Iterable<JobSeries> {
    for (const kinds of this.byQueue.values()) yield* kinds.values();
  }
}
