import { MicroBatcher } from '../../lib/util/micro-batcher.js';

describe('MicroBatcher', () => {
  it('writes the items pushed in one turn of the event loop with one call, results in order', async () => {
    const calls: number[][] = [];
    const batcher = new MicroBatcher<number, number>(async (items) => {
      calls.push(items);
      return items.map((n) => n * 10);
    });
    const results = await Promise.all([1, 2, 3].map((n) => batcher.push(n)));
    expect(results).toEqual([10, 20, 30]);
    expect(calls).toEqual([[1, 2, 3]]);
  });

  it('splits a turn larger than maxBatch into several writes, one at a time', async () => {
    let running = 0;
    let most = 0;
    const sizes: number[] = [];
    const batcher = new MicroBatcher<number, number>(async (items) => {
      most = Math.max(most, ++running);
      sizes.push(items.length);
      await new Promise((r) => setImmediate(r));
      running--;
      return items;
    }, 4);
    await Promise.all(Array.from({ length: 10 }, (_, i) => batcher.push(i)));
    expect(sizes).toEqual([4, 4, 2]);
    expect(most).toBe(1);
  });

  it('collects items pushed while a write is under way into the next write', async () => {
    const calls: number[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const batcher = new MicroBatcher<number, number>(async (items) => {
      calls.push(items);
      if (calls.length === 1) await gate;
      return items;
    });
    const first = batcher.push(1);
    await new Promise((r) => setImmediate(r)); // the first write has started and waits on the gate
    const later = [batcher.push(2), batcher.push(3)];
    release();
    await Promise.all([first, ...later]);
    expect(calls).toEqual([[1], [2, 3]]);
  });

  it('rejects every item of a failed write, and later writes still run', async () => {
    let fail = true;
    const batcher = new MicroBatcher<number, number>(async (items) => {
      if (fail) throw new Error('write failed');
      return items;
    });
    const failed = await Promise.allSettled([batcher.push(1), batcher.push(2)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(batcher.push(3)).resolves.toBe(3);
  });

  it('pushWith: calls back each item with its result, or with the failure of its write, never synchronously', async () => {
    let fail = false;
    const batcher = new MicroBatcher<number, number>(async (items) => {
      if (fail) throw new Error('write failed');
      return items.map((n) => n + 1);
    });
    const heard: Array<[number, number | undefined, unknown]> = [];
    const done = (item: number, result: number | undefined, failure: { reason: unknown } | undefined) =>
      heard.push([item, result, failure?.reason]);
    batcher.pushWith(1, done);
    batcher.pushWith(2, done);
    expect(heard).toEqual([]);
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setImmediate(r));
    expect(heard).toEqual([
      [1, 2, undefined],
      [2, 3, undefined],
    ]);
    fail = true;
    await new Promise<void>((resolve) =>
      batcher.pushWith(3, (...args) => resolve(void heard.push([args[0], args[1], args[2]?.reason]))),
    );
    expect(heard[2]).toEqual([3, undefined, new Error('write failed')]);
  });

  it('pushWith: a callback that throws does not keep the rest of its batch from hearing, nor later writes from running', async () => {
    const failed: unknown[] = [];
    const batcher = new MicroBatcher<number, number>(
      async (items) => items,
      512,
      (error) => failed.push(error),
    );
    const heard: number[] = [];
    batcher.pushWith(1, () => {
      throw new Error('callback failed');
    });
    batcher.pushWith(2, (item) => heard.push(item));
    await expect(batcher.push(3)).resolves.toBe(3);
    expect(heard).toEqual([2]);
    expect(failed).toEqual([new Error('callback failed')]); // handed on, not swallowed
  });
});
