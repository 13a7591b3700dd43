import type { Logger } from '@nestjs/common';
import { AwaMessages, RescueErrors } from '../awa.messages.js';
import type { AwaEvents } from '../events/awa-events.js';
import { ifHeld } from './attempt-outcome.js';
import type { InFlightJob } from './in-flight-job.js';
import type { LeaseRegistry } from './lease-registry.js';
import type { LeaseWriter } from './lease-writer.js';

/** Where the end of a claimed job that never started goes. */
export interface UnstartedSinks {
  writer: LeaseWriter;
  events: AwaEvents;
  leases: LeaseRegistry;
}

/** A buffered job was cancelled before it started: it ends cancelled (if its lease is still held). */
export async function cancelUnstarted(sinks: UnstartedSinks, job: InFlightJob, logger: Logger): Promise<void> {
  try {
    const held = await sinks.writer.cancel(job, RescueErrors.cancelled);
    sinks.events.emit({ type: 'ended', attempt: job.observed, outcome: undefined, state: ifHeld(held, 'cancelled') });
  } catch (error) {
    // Not lost: the lease stays stored with its cancel request, and its rescue ends it cancelled.
    logger.error(AwaMessages.operationFailed(`cancelling job ${job.id}`, String(error)));
  } finally {
    sinks.leases.remove(job);
  }
}

/**
 * Gives back, unstarted and without spending an attempt, jobs that waited too long to start (or, with
 * `reason`, that came to a worker that cannot start them).
 */
export async function giveBackUnstarted(
  sinks: UnstartedSinks,
  jobs: InFlightJob[],
  logger: Logger,
  reason: string = RescueErrors.releasedUnstarted,
): Promise<void> {
  try {
    await sinks.writer.release(jobs, reason, false);
  } catch (error) {
    // Not lost: the leases stay, stop being heartbeated, and maintenance rescues them.
    logger.error(AwaMessages.operationFailed('giving back buffered jobs', String(error)));
  } finally {
    for (const job of jobs) sinks.leases.remove(job);
  }
}
