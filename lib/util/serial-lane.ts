/**
 * Runs async tasks one at a time, in order. Lease writes of one instance (heartbeats, completions,
 * failures) go through one lane, so two of its own statements never lock the same lease rows in
 * different orders (which could deadlock).
 */
export class SerialLane {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
