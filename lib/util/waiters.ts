/** Promises that resolve together when release() is called; cheaper than one promise per item. */
export class Waiters {
  private resolvers: Array<() => void> = [];

  wait(): Promise<void> {
    return new Promise<void>((resolve) => this.resolvers.push(resolve));
  }

  release(): void {
    if (this.resolvers.length === 0) return;
    const resolvers = this.resolvers;
    this.resolvers = [];
    for (const resolve of resolvers) resolve();
  }
}
