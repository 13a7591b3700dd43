/**
 * How the producer wakes this instance's workers once its jobs are committed, without waiting for
 * its own NOTIFY (or, behind a transaction-mode pooler, which has no LISTEN, for the next poll).
 * A port: the producer knows only this; the worker side provides it (worker-wakeup.provider.ts).
 */
export interface WorkerWakeup {
  /** Wakes the claim loop of `queue` on this instance, if it runs one. */
  wake(queue: string): void;
}

/** Injection token of the WorkerWakeup. */
export const WORKER_WAKEUP = Symbol('AWA_WORKER_WAKEUP');
