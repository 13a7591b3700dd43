import { AsyncScope } from '../../lib/util/async-scope.js';
import { asyncStoreSlots } from '../support/async-store-slots.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('AsyncScope', () => {
  it('gives its store to the run, across awaits and timers, and none outside it', async () => {
    const scope = new AsyncScope<string>();
    expect(scope.store).toBeUndefined();
    const seen = await scope.run('a', async () => {
      const first = scope.store;
      await tick();
      const afterTick = scope.store;
      const inTimer = await new Promise((resolve) => setTimeout(() => resolve(scope.store), 1));
      return [first, afterTick, inTimer];
    });
    expect(seen).toEqual(['a', 'a', 'a']);
    expect(scope.store).toBeUndefined();
  });

  it('keeps each of two overlapping runs its own store until it ends', async () => {
    const scope = new AsyncScope<string>();
    let releaseA!: () => void;
    const a = scope.run('a', async () => {
      await new Promise<void>((resolve) => (releaseA = resolve));
      return scope.store;
    });
    const seenInB: Array<string | undefined> = [];
    let releaseB!: () => void;
    const b = scope.run('b', async () => {
      seenInB.push(scope.store);
      await new Promise<void>((resolve) => (releaseB = resolve));
      seenInB.push(scope.store);
    });
    await tick();
    releaseA();
    expect(await a).toBe('a');
    releaseB(); // after a ended: b's store is still there
    await b;
    expect(seenInB).toEqual(['b', 'b']);
    expect(scope.store).toBeUndefined();
  });

  it('leaves no store to a continuation that outlives the last run', async () => {
    const scope = new AsyncScope<string>();
    let later!: Promise<string | undefined>;
    await scope.run('a', async () => {
      later = new Promise((resolve) => setTimeout(() => resolve(scope.store), 20));
    });
    expect(await later).toBeUndefined();
  });

  it('is switched off between runs: no async resource made after the last run carries a slot for it', async () => {
    const before = await asyncStoreSlots();
    const scope = new AsyncScope<string>();
    await scope.run('a', async () => {
      await tick();
    });
    await scope.run('b', async () => {
      await tick();
    });
    expect(await asyncStoreSlots()).toBe(before);
  });
});
