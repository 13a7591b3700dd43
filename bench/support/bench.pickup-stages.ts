import pg from 'pg';
import { AWA_JOBS_CHANNEL } from '../../lib/awa.constants.js';
import { claimJobs } from '../../lib/sql/worker.sql.js';
import { now } from './bench.progress.js';

/** When, in one pickup sample, the worker's side of it happened (performance.now(); NaN: not seen). */
export interface PickupStageMarks {
  /** The worker's session emitted the `awa_jobs` notification. */
  notified: number;
  /** The claim that followed it was handed to pg (its parameters serialized, the socket written). */
  claimSent: number;
  /** That claim's rows came back. */
  claimed: number;
}

/**
 * Splits a pickup into its stages by watching pg on every connection of the process: the first
 * `awa_jobs` notification a client emits after arm(), the first plain claim sent after it, and that
 * claim's answer. It wraps pg's `Client.prototype` `emit` and `query` while attached (the bench's
 * instrument, as StatementCounter). Only for the NOTIFY path, where the producer-only instance
 * LISTENs on nothing: the one client to emit that notification is the worker's session.
 */
export class PickupStageProbe {
  private marks: PickupStageMarks = { notified: NaN, claimSent: NaN, claimed: NaN };
  private restore: (() => void) | undefined;

  attach(): this {
    type Proto = { emit: (...args: unknown[]) => boolean; query: (...args: unknown[]) => unknown };
    const proto = pg.Client.prototype as unknown as Proto;
    const { emit, query } = proto;
    // The wrappers run with pg's client as `this`: they reach the marks through a getter instead.
    const current = (): PickupStageMarks => this.marks;
    proto.emit = function (this: pg.Client, ...args: unknown[]) {
      const [event, message] = args as [string, { channel?: string } | undefined];
      if (event === 'notification' && message?.channel === AWA_JOBS_CHANNEL && Number.isNaN(current().notified))
        current().notified = now();
      return emit.apply(this, args);
    };
    proto.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as { name?: string } | undefined;
      const marks = current();
      const watched = first?.name === claimJobs.name && !Number.isNaN(marks.notified) && Number.isNaN(marks.claimSent);
      const result = query.apply(this, args);
      if (watched) {
        marks.claimSent = now(); // after query(): pg serializes and writes the message synchronously
        if (result instanceof Promise)
          result.then(
            () => (marks.claimed = now()),
            () => undefined,
          );
      }
      return result;
    };
    this.restore = () => {
      proto.emit = emit;
      proto.query = query;
    };
    return this;
  }

  /** Starts a sample: forgets the last one's marks. */
  arm(): void {
    this.marks = { notified: NaN, claimSent: NaN, claimed: NaN };
  }

  /** The current sample's marks. */
  read(): PickupStageMarks {
    return { ...this.marks };
  }

  detach(): void {
    this.restore?.();
    this.restore = undefined;
  }
}
