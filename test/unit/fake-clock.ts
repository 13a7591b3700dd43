import type { BufferClock } from '../../lib/worker/prefetch-buffer.js';

/** A clock the test moves by hand; its timers fire as it passes them. */
export class FakeClock implements BufferClock {
  time = 1_000;
  private timers: { at: number; fn: () => void }[] = [];

  now(): number {
    return this.time;
  }
  after(ms: number, fn: () => void): unknown {
    const timer = { at: this.time + ms, fn };
    this.timers.push(timer);
    return timer;
  }
  cancel(timer: unknown): void {
    this.timers = this.timers.filter((t) => t !== timer);
  }
  get pending(): number {
    return this.timers.length;
  }
  advance(ms: number): void {
    this.time += ms;
    const due = this.timers.filter((t) => t.at <= this.time);
    this.timers = this.timers.filter((t) => t.at > this.time);
    for (const timer of due) timer.fn();
  }
}
