/** Wakes a claim loop once, at the earliest time asked for (the rate limit or a hold lets the next attempt start). */
export class WakeTimer {
  private timer: NodeJS.Timeout | undefined;
  private at = 0;
  private readonly fire = () => {
    this.timer = undefined;
    this.wake();
  };

  constructor(private readonly wake: () => void) {}

  /** Wakes in `ms` (at least 1), unless a wake-up is due sooner already. */
  in(ms: number): void {
    const at = performance.now() + Math.max(1, Math.ceil(ms));
    if (this.timer && this.at <= at) return;
    clearTimeout(this.timer);
    this.at = at;
    this.timer = setTimeout(this.fire, at - performance.now()).unref();
  }

  cancel(): void {
    clearTimeout(this.timer);
  }
}
