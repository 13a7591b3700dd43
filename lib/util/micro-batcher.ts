/**
 * Collects items pushed in the same turn of the event loop (and while a flush is under way) and
 * writes them with one call. At most one flush runs at a time; batches hold at most `maxBatch`.
 * `write` returns one result per item, in order.
 */
export class MicroBatcher<I, R> {
  private queue: Array<{ item: I; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private flushing: Promise<void> | undefined;
  private scheduled = false;

  constructor(
    private readonly write: (items: I[]) => Promise<R[]>,
    private readonly maxBatch = 512,
  ) {}

  push(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flushing = this.flush().finally(() => {
        this.flushing = undefined;
        if (this.queue.length > 0) this.schedule();
      });
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      try {
        const results = await this.write(batch.map((b) => b.item));
        batch.forEach((b, i) => b.resolve(results[i]!));
      } catch (error) {
        batch.forEach((b) => b.reject(error));
      }
    }
  }
}
