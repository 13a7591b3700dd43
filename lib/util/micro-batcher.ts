/** How a batched write ended for one item: `failure` is set if the write threw (its `reason`). */
export type BatchCallback<I, R> = (item: I, result: R | undefined, failure: { reason: unknown } | undefined) => void;

/**
 * Collects items pushed in the same turn of the event loop (and while a flush is under way) and
 * writes them with one call. At most one flush runs at a time; batches hold at most `maxBatch`.
 * `write` returns one result per item, in order.
 *
 * pushWith() takes a callback instead of returning a promise: the hottest write (a completion per
 * job) then allocates no promise, closure or entry object per item, only two array slots.
 */
export class MicroBatcher<I, R> {
  private items: I[] = [];
  private callbacks: Array<BatchCallback<I, R>> = [];
  private flushing: Promise<void> | undefined;
  private scheduled = false;

  constructor(
    private readonly write: (items: I[]) => Promise<R[]>,
    private readonly maxBatch = 512,
    /** Where a callback's throw goes (after the rest of its batch heard): by default, uncaught. */
    private readonly callbackFailed: (error: unknown) => void = raiseUncaught,
  ) {}

  push(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) =>
      this.pushWith(item, (_item, result, failure) => (failure ? reject(failure.reason) : resolve(result as R))),
    );
  }

  /** Queues `item`; `done` is called once its batch is written (or failed), never synchronously. */
  pushWith(item: I, done: BatchCallback<I, R>): void {
    this.items.push(item);
    this.callbacks.push(done);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined;
        if (this.items.length > 0) this.schedule();
      });
    });
  }

  private async flush(): Promise<void> {
    while (this.items.length > 0) {
      const items = this.items.splice(0, this.maxBatch);
      const callbacks = this.callbacks.splice(0, this.maxBatch);
      let results: R[] | undefined;
      let failure: { reason: unknown } | undefined;
      try {
        results = await this.write(items);
      } catch (reason) {
        failure = { reason };
      }
      // Every item hears of its batch, even if a callback throws (as a rejected promise's would).
      for (let i = 0; i < items.length; i++) {
        try {
          callbacks[i]!(items[i]!, results?.[i], failure);
        } catch (error) {
          this.callbackFailed(error);
        }
      }
    }
  }
}

/** A callback's error, thrown outside the batcher: as loud as a throw in a promise's then(). */
function raiseUncaught(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}
