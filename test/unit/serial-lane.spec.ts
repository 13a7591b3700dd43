import { SerialLane } from '../../lib/util/serial-lane.js';
import { Waiters } from '../../lib/util/waiters.js';

describe('SerialLane', () => {
  it('runs tasks one at a time, in the order they were given', async () => {
    const lane = new SerialLane();
    const log: string[] = [];
    const task = (name: string, turns: number) => async () => {
      log.push(`start ${name}`);
      for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
      log.push(`end ${name}`);
      return name;
    };
    const results = await Promise.all([lane.run(task('a', 3)), lane.run(task('b', 1)), lane.run(task('c', 0))]);
    expect(results).toEqual(['a', 'b', 'c']);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });

  it('goes on with the next task after one rejects, and passes the rejection to its caller only', async () => {
    const lane = new SerialLane();
    const failing = lane.run(async () => {
      throw new Error('boom');
    });
    const next = lane.run(async () => 'next');
    await expect(failing).rejects.toThrow('boom');
    await expect(next).resolves.toBe('next');
  });
});

describe('Waiters', () => {
  it('resolves every waiter at release, and only those waiting then', async () => {
    const waiters = new Waiters();
    const settled: number[] = [];
    void waiters.wait().then(() => settled.push(1));
    void waiters.wait().then(() => settled.push(2));
    waiters.release();
    await new Promise((r) => setImmediate(r));
    expect(settled).toEqual([1, 2]);
    let late = false;
    void waiters.wait().then(() => (late = true));
    await new Promise((r) => setImmediate(r));
    expect(late).toBe(false);
    waiters.release();
    await new Promise((r) => setImmediate(r));
    expect(late).toBe(true);
  });
});
