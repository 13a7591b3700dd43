import { Injectable } from '@nestjs/common';
import type { Job, JobState } from '../interfaces/job.interface.js';
import type { RescuedRow } from '../sql/maintenance.sql.js';
import type { ObservedAttempt, ObservedOutcome } from './observed-attempt.js';

/** Why maintenance rescued a lease. */
export type RescueReason = 'heartbeat' | 'deadline' | 'orphan';

/**
 * What happened in the core, as an observer (lib/telemetry) sees it: an attempt's events carry its
 * ObservedAttempt, never the worker's own objects.
 */
export type AwaEvent =
  | { type: 'enqueued'; jobs: ReadonlyArray<{ kind: string; queue: string }> }
  | { type: 'claimed'; queue: string; count: number }
  | { type: 'started'; attempt: ObservedAttempt }
  /**
   * An attempt's end was written. `state` is the job's new state, null when the lease was no longer
   * held (the write was fenced out). `outcome` is undefined for a job cancelled before it started.
   */
  | { type: 'ended'; attempt: ObservedAttempt; outcome: ObservedOutcome | undefined; state: JobState | null }
  | { type: 'snoozed'; attempt: ObservedAttempt }
  /** Jobs cancelled while waiting (never claimed), by producer.cancel(). */
  | { type: 'cancelled'; jobs: ReadonlyArray<{ kind: string; queue: string }> }
  | { type: 'rescued'; reason: RescueReason; jobs: readonly RescuedRow[] }
  | { type: 'heartbeat'; durationMs: number; leases: number };

export type AwaEventListener = (event: AwaEvent) => void;

/** Wraps the core's two traced operations: an insert of jobs, and a handler's run. */
export interface AwaTraceHooks {
  /** Runs `insert`, giving it the W3C traceparent to store with the jobs (or undefined). */
  send<T>(
    jobs: ReadonlyArray<{ kind: string; queue: string }>,
    insert: (traceparent?: string) => Promise<T>,
  ): Promise<T>;
  /** The handler to run for this attempt, wrapped in its consumer span. */
  process(attempt: ObservedAttempt, invoke: (job: Job) => unknown): (job: Job) => unknown;
}

/**
 * @internal The core's event observer. The core emits each event with one call; with no listener
 * (no telemetry) an emit is a loop over an empty array. Listeners must not throw; one that does is
 * ignored, so telemetry can never break a job.
 */
@Injectable()
export class AwaEvents {
  private listeners: AwaEventListener[] = [];
  private trace: AwaTraceHooks | undefined;

  /** Adds a listener; returns its removal. */
  subscribe(listener: AwaEventListener): () => void {
    this.listeners = [...this.listeners, listener];
    return () => (this.listeners = this.listeners.filter((l) => l !== listener));
  }

  /** Whether a listener is subscribed: with none, the core builds no event objects (the hot path skips emit). */
  get listening(): boolean {
    return this.listeners.length > 0;
  }

  /** Whether anything observes the core: a listener, or trace hooks that wrap its operations. */
  get observed(): boolean {
    return this.listeners.length > 0 || this.trace !== undefined;
  }

  /** Installs (or, with undefined, removes) the trace hooks. */
  traceWith(hooks: AwaTraceHooks | undefined): void {
    this.trace = hooks;
  }

  emit(event: AwaEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event);
      } catch {
        // An observer's fault is not the job's.
      }
    }
  }

  send<T>(
    jobs: ReadonlyArray<{ kind: string; queue: string }>,
    insert: (traceparent?: string) => Promise<T>,
  ): Promise<T> {
    return this.trace ? this.trace.send(jobs, insert) : insert();
  }

  /** `invoke`, wrapped by the trace hooks if any; `attempt.observed` is read only then (it is made on first use). */
  process(attempt: { readonly observed: ObservedAttempt }, invoke: (job: Job) => unknown): (job: Job) => unknown {
    return this.trace ? this.trace.process(attempt.observed, invoke) : invoke;
  }
}
