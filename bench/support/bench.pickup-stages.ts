import pg from 'pg';
import { AWA_HANDOFF_CHANNEL, AWA_JOBS_CHANNEL } from '../../lib/awa.constants.js';
import { insertHandedOff, insertHandedOffFlushedLater } from '../../lib/sql/handoff.sql.js';
import { insertJobs } from '../../lib/sql/jobs.sql.js';
import { claimJobs } from '../../lib/sql/claim.sql.js';
import { now } from './bench.progress.js';

/** When, in one pickup sample, each step of it happened (performance.now(); NaN: not seen). */
export interface PickupStageMarks {
  /** The producer's insert was handed to pg (the enqueue's Node path done). */
  inserting: number;
  /** The worker's session emitted the notification (`awa_jobs`, or `awa_handoff` with the job). */
  notified: number;
  /** The claim that followed it was handed to pg (its parameters serialized, the socket written). */
  claimSent: number;
  /** That claim's rows came back. */
  claimed: number;
}

/**
 * Splits a pickup into its stages by watching pg on every connection of the process: the first
 * producer's insert sent after arm(), the first notification a client emits on the path's channel
 * (`awa_jobs`, or `awa_handoff`), the first plain claim sent after it, and that claim's answer. It
 * wraps pg's `Client.prototype` `emit` and `query` while attached (the bench's instrument, as
 * StatementCounter). Only for the paths where the job comes from another instance,
 * whose producer-only app LISTENs on nothing: the one client to emit that notification is the
 * worker's session. With a handoff there is no claim: claimSent and claimed stay NaN.
 */
export class PickupStageProbe {
  private marks = unmarked();
  private readonly channel: string;
  private restore: (() => void) | undefined;

  /** `handoff`: the job comes in the notification (docs/handoff.md), no claim follows. */
  constructor(handoff = false) {
    this.channel = handoff ? AWA_HANDOFF_CHANNEL : AWA_JOBS_CHANNEL;
  }

  attach(): this {
    type Proto = { emit: (...args: unknown[]) => boolean; query: (...args: unknown[]) => unknown };
    const proto = pg.Client.prototype as unknown as Proto;
    const { emit, query } = proto;
    // The wrappers run with pg's client as `this`: they reach the marks through a getter instead.
    const current = (): PickupStageMarks => this.marks;
    const channel = this.channel;
    const inserts = new Set([insertJobs.name, insertHandedOff.name, insertHandedOffFlushedLater.name]);
    proto.emit = function (this: pg.Client, ...args: unknown[]) {
      const [event, message] = args as [string, { channel?: string } | undefined];
      if (event === 'notification' && message?.channel === channel && Number.isNaN(current().notified))
        current().notified = now();
      return emit.apply(this, args);
    };
    proto.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as { name?: string } | undefined;
      const marks = current();
      const inserting = first?.name !== undefined && inserts.has(first.name) && Number.isNaN(marks.inserting);
      const watched = first?.name === claimJobs.name && !Number.isNaN(marks.notified) && Number.isNaN(marks.claimSent);
      const result = query.apply(this, args);
      if (inserting) marks.inserting = now();
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
    this.marks = unmarked();
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

const unmarked = (): PickupStageMarks => ({ inserting: NaN, notified: NaN, claimSent: NaN, claimed: NaN });
