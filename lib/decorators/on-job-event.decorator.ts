import { SetMetadata } from '@nestjs/common';

/** Metadata key set by @OnJobEvent on a method. */
export const ON_JOB_EVENT_METADATA = 'awa:on-job-event';

/**
 * The durable events of a job (docs/durable-events.md), each written in the transaction of its transition:
 * `completed`, `failed` (attempts spent, or a snooze over maxSnoozes), `cancelled`, `retrying` (an attempt
 * failed, another comes), `rescued` (maintenance took a lease back: followed by the event of the state it
 * moved the job to), `snoozed`, `released` (an attempt given back unspent: shutdown, rate limit) and
 * `deleted` (by QueueAdmin).
 */
export const JOB_EVENT_NAMES = [
  'completed',
  'failed',
  'cancelled',
  'retrying',
  'rescued',
  'snoozed',
  'released',
  'deleted',
] as const;
export type JobEventName = (typeof JOB_EVENT_NAMES)[number];

export interface OnJobEventOptions {
  /**
   * The group: the unit of delivery. Each group has its own position, and one instance at a time
   * delivers its events, in order, at least once. A group name is stored: renaming one starts a new group.
   */
  group: string;
  /** Only jobs of these kinds; `*` matches any run of characters (`order.*`). Default: every kind. */
  kinds?: string[];
  /** Only jobs of these queues. Default: every queue. */
  queues?: string[];
}

export interface OnJobEventMetadata extends OnJobEventOptions {
  events: JobEventName[];
}

/**
 * Subscribes the method to durable job events: it receives each `JobEvent` of its group, in the order
 * the transitions committed, at least once; returning acknowledges it, throwing gets it again after a
 * backoff (the group waits for it). Not the in-process `AwaEvents` (docs/durable-events.md).
 *
 *   @OnJobEvent('completed', { group: 'billing', kinds: ['order.place'] })
 *   async bill(event: JobEvent) { ... }
 */
export function OnJobEvent(events: JobEventName | JobEventName[], options: OnJobEventOptions): MethodDecorator {
  const metadata: OnJobEventMetadata = { ...options, events: Array.isArray(events) ? events : [events] };
  return SetMetadata(ON_JOB_EVENT_METADATA, metadata);
}
