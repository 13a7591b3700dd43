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
});
