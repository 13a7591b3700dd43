import { AbortReasons, RescueErrors } from '../awa.messages.js';
import type { AwaEvents } from '../events/awa-events.js';
import { hasFlowControl } from './queue-claim.js';
import type { JobState } from '../interfaces/job.interface.js';
import type { ResolvedQueueOptions } from '../options/awa-options.resolved.js';
import { clip, describeThrown } from '../util/describe-error.js';
import type { AttemptOutcome, InFlightJob } from './in-flight-job.js';
import { JobSnooze } from '../interfaces/job-snooze.js';
import type { LeaseWriter } from './lease-writer.js';

/** An attempt's end that is still to be written: `released` was written by the shutdown that released it. */
export type UnwrittenOutcome = Exclude<AttemptOutcome, { kind: 'released' | 'unstarted' }>;

/** Where an attempt's end goes: the fenced writes, and the observers (telemetry). */
export interface OutcomeSinks {
  writer: LeaseWriter;
  events: AwaEvents;
}

/** The state an attempt's write left its job in: `state` if the lease was still held, else null. */
export const ifHeld = (held: boolean, state: JobState): JobState | null => (held ? state : null);

/** The error an attempt's end adds to the job's errors: what the handler threw, or the deadline. */
export function attemptError(outcome: AttemptOutcome): string | undefined {
  if (outcome.kind === 'threw') return clip(describeThrown(outcome.error));
  return outcome.kind === 'deadline' ? RescueErrors.deadlineExceeded : undefined;
}

/**
 * Writes how an attempt ended and emits `ended` (and `snoozed`): cancelled if a cancel was
 * requested, else completed or snoozed, backed off (the attempt given back unspent, the queue or
 * key held when the queue has flow control), or failed (retried or not). QueueWorker and
 * AwaTesting.drain both write through it, so a drained job ends as a worker's would. Returns the
 * job's new state, null when the lease was no longer held (the write was fenced out).
 */
export async function writeAttemptOutcome(
  sinks: OutcomeSinks,
  options: ResolvedQueueOptions,
  inFlight: InFlightJob,
  outcome: UnwrittenOutcome,
): Promise<JobState | null> {
  const { writer, events } = sinks;
  if (outcome.kind === 'deadline') inFlight.abort(AbortReasons.deadline);
  if (inFlight.transactionUsed) {
    // Its job.transaction decides first; if it completed the job, there is nothing left to write.
    await writer.transactions.settled(inFlight);
    if (inFlight.completedInTransaction) return ended(events, inFlight, { kind: 'returned' }, 'completed');
  }
  const snoozed = inFlight.returned instanceof JobSnooze;
  const state = inFlight.cancelRequested
    ? ifHeld(await writer.cancel(inFlight, RescueErrors.cancelled), 'cancelled')
    : outcome.kind === 'returned'
      ? ifHeld(await writer.complete(inFlight), snoozed ? 'scheduled' : 'completed')
      : outcome.kind === 'rateLimited'
        ? ((await writer.rateLimit(
            inFlight,
            outcome.retryAfterMs,
            hasFlowControl(options),
            options.keyConcurrency > 0,
          )) as JobState | null)
        : await writer.fail({
            job: inFlight,
            error: attemptError(outcome)!,
            retryBaseDelay: options.retryBaseDelay,
            retryMaxDelay: options.retryMaxDelay,
          });
  ended(events, inFlight, outcome, state);
  if (events.listening && state === 'scheduled' && snoozed)
    events.emit({ type: 'snoozed', attempt: inFlight.observed });
  return state;
}

function ended(events: AwaEvents, inFlight: InFlightJob, outcome: UnwrittenOutcome, state: JobState | null) {
  if (events.listening) events.emit({ type: 'ended', attempt: inFlight.observed, outcome, state });
  return state;
}
