import { monotonicClock, type BufferClock } from './prefetch-buffer.js';

/** An attempt whose hard deadline the sweep watches. */
export interface DeadlineEntry {
  /** When it is due, on the sweep's clock: set by add(), cleared by remove() and when it fires. */
  deadlineAt: number | undefined;
  /** Called once, at the deadline, unless removed before. */
  pastDeadline(): void;
}

/**
 * The hard deadlines of one queue's attempts, with one timer for all of them instead of one per
 * attempt (a timer set and cleared per job is a measurable part of a short job's cost). A queue's
 * deadline duration is fixed and its attempts start in time order, so deadlines arrive in order: a
 * FIFO holds them, and the timer waits for the oldest live one. A removed entry is only marked; the
 * FIFO is compacted when marked ones outnumber live ones, so a long handler at its head does not
 * keep the attempts that ended behind it.
 */
export class DeadlineSweep {
  private entries: DeadlineEntry[] = [];
  private head = 0;
  private live = 0;
  private timer: unknown;
  /** When the timer fires (undefined: not armed). */
  private timerAt: number | undefined;
  private readonly fire = () => {
    this.timerAt = undefined;
    this.sweep();
  };

  constructor(
    /** The deadline of every attempt, from its start, in ms (> 0). */
    readonly durationMs: number,
    private readonly clock: BufferClock = monotonicClock,
  ) {}

  /** Attempts watched now. */
  get size(): number {
    return this.live;
  }

  /** Watches `entry`, due `durationMs` from now. */
  add(entry: DeadlineEntry): void {
    const at = this.clock.now() + this.durationMs;
    entry.deadlineAt = at;
    const last = this.entries[this.entries.length - 1];
    // A clock that went back (never, for a monotonic one) must not leave an entry behind a later one.
    if (last?.deadlineAt !== undefined && last.deadlineAt > at) this.insertInOrder(entry, at);
    else this.entries.push(entry);
    this.live++;
    if (this.timerAt === undefined || this.timerAt > at) this.arm(at);
  }

  /** Stops watching `entry` (its attempt ended before its deadline). */
  remove(entry: DeadlineEntry): void {
    if (entry.deadlineAt === undefined) return;
    entry.deadlineAt = undefined;
    this.live--;
    if (this.live === 0) {
      this.clear();
      return;
    }
    this.skipRemoved();
    if (this.entries.length - this.head > 2 * this.live + 64) this.compact();
  }

  /** Stops the timer and forgets every entry (shutdown: the attempts are released). */
  stop(): void {
    for (let i = this.head; i < this.entries.length; i++) this.entries[i]!.deadlineAt = undefined;
    this.live = 0;
    this.clear();
  }

  /** Fires every entry due by now, then waits for the next one. */
  private sweep(): void {
    const now = this.clock.now();
    for (;;) {
      this.skipRemoved();
      const entry = this.entries[this.head];
      if (entry === undefined) break;
      if (entry.deadlineAt! > now) {
        this.arm(entry.deadlineAt!);
        return;
      }
      this.head++;
      entry.deadlineAt = undefined;
      this.live--;
      entry.pastDeadline();
    }
    if (this.live === 0) this.clear();
  }

  private skipRemoved(): void {
    while (this.head < this.entries.length && this.entries[this.head]!.deadlineAt === undefined) this.head++;
    if (this.head > 1024 && this.head * 2 > this.entries.length) this.compact();
  }

  private compact(): void {
    this.entries = this.entries.filter((e, i) => i >= this.head && e.deadlineAt !== undefined);
    this.head = 0;
  }

  private clear(): void {
    this.entries = [];
    this.head = 0;
    this.clock.cancel(this.timer);
    this.timer = undefined;
    this.timerAt = undefined;
  }

  private arm(at: number): void {
    this.clock.cancel(this.timer);
    this.timerAt = at;
    this.timer = this.clock.after(Math.max(1, Math.ceil(at - this.clock.now())), this.fire);
  }

  private insertInOrder(entry: DeadlineEntry, at: number): void {
    let i = this.entries.length;
    while (i > this.head && (this.entries[i - 1]!.deadlineAt ?? -Infinity) > at) i--;
    this.entries.splice(i, 0, entry);
  }
}
