import type { Attributes, BatchObservableResult, Counter, Histogram, Meter } from '@opentelemetry/api';
import type { AwaDatabase } from '../database/awa-database.js';
import type { AwaEvent, AwaEvents } from '../events/awa-events.js';
import type { ObservedAttempt } from '../events/observed-attempt.js';
import type { JobEventGroupState } from '../events/job-event.js';
import type { JobState } from '../interfaces/job.interface.js';
import { INSTRUMENTATION_SCOPE, type OtelApi } from './otel-api.js';
import { FAILED_OUTCOMES, JOB_COUNTS, SeriesTable, type JobCount } from './telemetry.series.js';
import { queueDepths } from './telemetry.sql.js';
import { workflowEndings } from './telemetry.workflows.js';

/** @internal The names of every instrument; docs/sections/telemetry.md documents each. */
export const AwaMetricNames = {
  enqueued: 'awa.job.enqueued',
  started: 'awa.job.started',
  completed: 'awa.job.completed',
  failed: 'awa.job.failed',
  retried: 'awa.job.retried',
  snoozed: 'awa.job.snoozed',
  cancelled: 'awa.job.cancelled',
  rescued: 'awa.job.rescued',
  duration: 'awa.job.duration',
  wait: 'awa.job.wait',
  claimBatch: 'awa.claim.batch_size',
  heartbeat: 'awa.heartbeat.duration',
  depth: 'awa.queue.depth',
  oldestAvailable: 'awa.queue.oldest_available_age',
  leader: 'awa.leader',
  eventGroupLag: 'awa.event_group.lag',
  eventGroupLagAge: 'awa.event_group.lag_age',
  workflowEnded: 'awa.workflow.ended',
} as const;

type CounterName = JobCount | 'failed' | 'rescued';

const COUNTERS: Record<CounterName, string> = {
  enqueued: 'Jobs enqueued',
  started: 'Attempts started (handler called)',
  completed: 'Attempts that completed their job',
  failed: 'Attempts that failed (handler threw or passed its deadline); outcome: the job state after it',
  retried: 'Failed attempts whose job will run again (retryable)',
  snoozed: 'Attempts that snoozed their job',
  cancelled: 'Jobs cancelled, waiting or claimed',
  rescued: 'Leases rescued by maintenance; reason: heartbeat, deadline or orphan',
};

/** Bucket bounds of the histograms in seconds (the SDK's default ones are made for milliseconds). */
const SECOND_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 300];
const BATCH_BUCKETS = [0, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000];

/** What the gauges read: the database and whether this instance leads maintenance. */
export interface GaugeSource {
  db: AwaDatabase;
  isLeader: () => boolean;
  /** Of the leader gauge: `{ module }` for a named AwaModule's, none for the default module's. */
  attributes?: Attributes;
  /** The durable-event groups' lag in this module's database (JobEventGroups.localGroups()). */
  eventGroups?: () => Promise<JobEventGroupState[]>;
}

/**
 * @internal Records the core's events as OTel metrics, and registers the leader's gauges. Returns
 * the function that stops it. Started only with an SDK's MeterProvider registered. Per job it
 * makes two SDK records (wait and duration): the job counters are counted by (queue, kind) here
 * and added to the SDK's counters in bulk as a collection begins, and when it stops (see JobSeries).
 */
export function startMetrics(api: OtelApi, events: AwaEvents, gauges: GaugeSource): () => void {
  const meter = api.metrics.getMeter(INSTRUMENTATION_SCOPE);
  const counters = Object.fromEntries(
    Object.entries(COUNTERS).map(([key, description]) => [
      key,
      meter.createCounter(AwaMetricNames[key as CounterName], { description, unit: '{job}' }),
    ]),
  ) as Record<CounterName, Counter>;
  const seconds = (name: string, description: string): Histogram =>
    meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: SECOND_BUCKETS } });
  const duration = seconds(
    AwaMetricNames.duration,
    'From the start of an attempt until its end was written; outcome: the job state after it',
  );
  const wait = seconds(AwaMetricNames.wait, 'Time from run_at (due) to the handler start');
  const heartbeat = seconds(AwaMetricNames.heartbeat, 'Duration of a heartbeat tick of this instance');
  const claimBatch = meter.createHistogram(AwaMetricNames.claimBatch, {
    description: 'Jobs returned by one claim statement',
    unit: '{job}',
    advice: { explicitBucketBoundaries: BATCH_BUCKETS },
  });
  const workflowEnded = meter.createCounter(AwaMetricNames.workflowEnded, {
    description: 'Workflows whose last job ended, by outcome (counted by the maintenance leader)',
    unit: '{workflow}',
  });
  const countWorkflows = workflowEndings(gauges.db, workflowEnded, gauges.attributes);
  const series = new SeriesTable();
  const startedAt = new WeakMap<ObservedAttempt, number>();
  const claimAttributes = new Map<string, Attributes>();

  const onEvent = (event: AwaEvent): void => {
    switch (event.type) {
      case 'enqueued':
      case 'cancelled':
        for (const { queue, kind } of event.jobs) series.of(queue, kind).counts[event.type]++;
        return;
      case 'claimed': {
        let attributes = claimAttributes.get(event.queue);
        if (!attributes) claimAttributes.set(event.queue, (attributes = { queue: event.queue }));
        claimBatch.record(event.count, attributes);
        return;
      }
      case 'started': {
        const { attempt } = event;
        const s = series.of(attempt.queue, attempt.kind);
        startedAt.set(attempt, performance.now());
        s.counts.started++;
        wait.record(Math.max(0, Date.now() - attempt.runAtMs) / 1000, s.attributes);
        return;
      }
      case 'ended':
        return onEnded(event.attempt, event.state);
      case 'snoozed':
        series.of(event.attempt.queue, event.attempt.kind).counts.snoozed++;
        return;
      case 'rescued':
        // Rare (maintenance rescues), so added to the SDK's counter at once.
        for (const { queue, kind, state } of event.jobs)
          counters.rescued.add(1, { queue, kind, reason: event.reason, outcome: state });
        return;
      case 'heartbeat':
        heartbeat.record(event.durationMs / 1000);
        return;
    }
  };

  const onEnded = (attempt: ObservedAttempt, state: JobState | null): void => {
    const s = series.of(attempt.queue, attempt.kind);
    const began = startedAt.get(attempt);
    if (began !== undefined) {
      startedAt.delete(attempt);
      duration.record((performance.now() - began) / 1000, s.withOutcome(state ?? 'lease_lost'));
    }
    if (state === 'completed' || state === 'cancelled') s.counts[state]++;
    else if (state === 'retryable' || state === 'failed') {
      s.failed[state]++;
      if (state === 'retryable') s.counts.retried++;
    }
  };

  /** Adds the counts since the last flush to the SDK's counters. */
  const flushCounts = (): void => {
    for (const s of series.all()) {
      for (const name of JOB_COUNTS) {
        const count = s.counts[name];
        if (count === 0) continue;
        s.counts[name] = 0;
        counters[name].add(count, s.attributes);
      }
      for (const outcome of FAILED_OUTCOMES) {
        const count = s.failed[outcome];
        if (count === 0) continue;
        s.failed[outcome] = 0;
        counters.failed.add(count, s.withOutcome(outcome));
      }
    }
  };

  // The SDK runs the observable callbacks first as it collects, then reads the counters: flushed there,
  // every collection sees every count.
  const stopGauges = registerGauges(meter, gauges, flushCounts, countWorkflows);
  const unsubscribe = events.subscribe(onEvent);
  return () => {
    unsubscribe();
    flushCounts(); // the SDK keeps them for its last export, after the app stopped
    stopGauges();
  };
}

/** The observable gauges: the leader reports queue depths and ages; every instance its leader flag. */
function registerGauges(
  meter: Meter,
  source: GaugeSource,
  beforeCollect: () => void,
  countWorkflows: (leads: boolean) => Promise<void>,
): () => void {
  const depth = meter.createObservableGauge(AwaMetricNames.depth, {
    description: 'Unfinished jobs by queue and state (reported by the maintenance leader only)',
    unit: '{job}',
  });
  const oldest = meter.createObservableGauge(AwaMetricNames.oldestAvailable, {
    description: 'How long the oldest available job of a queue has been due (maintenance leader only)',
    unit: 's',
  });
  const leader = meter.createObservableGauge(AwaMetricNames.leader, {
    description: '1 while this instance leads maintenance, else 0',
    unit: '1',
  });
  const lag = meter.createObservableGauge(AwaMetricNames.eventGroupLag, {
    description: 'Durable job events a group has not acknowledged, counted up to 10,000 (maintenance leader only)',
    unit: '{event}',
  });
  const lagAge = meter.createObservableGauge(AwaMetricNames.eventGroupLagAge, {
    description: "Age of a durable-event group's oldest unacknowledged event (maintenance leader only)",
    unit: 's',
  });
  const callback = async (result: BatchObservableResult): Promise<void> => {
    beforeCollect();
    const leads = source.isLeader();
    result.observe(leader, leads ? 1 : 0, source.attributes);
    await countWorkflows(leads);
    if (!leads) return;
    for (const row of await source.db.query(queueDepths)) {
      result.observe(depth, row.count, { queue: row.queue, state: row.state });
      if (row.oldest_available_s !== null) result.observe(oldest, row.oldest_available_s, { queue: row.queue });
    }
    for (const group of (await source.eventGroups?.()) ?? []) {
      const attributes = { ...source.attributes, group: group.group };
      result.observe(lag, group.lagEvents, attributes);
      result.observe(lagAge, group.lagMs / 1000, attributes);
    }
  };
  const observed = [depth, oldest, leader, lag, lagAge];
  meter.addBatchObservableCallback(callback, observed);
  return () => meter.removeBatchObservableCallback(callback, observed);
}
