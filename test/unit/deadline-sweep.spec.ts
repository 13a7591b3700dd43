import { DeadlineSweep, type DeadlineEntry } from '../../lib/worker/deadline-sweep.js';
import { FakeClock } from './fake-clock.js';

/** An attempt as the sweep sees it: it records when its deadline fired. */
class Attempt implements DeadlineEntry {
  deadlineAt: number | undefined;
  firedAt: number | undefined;
  constructor(private readonly clock: FakeClock) {}
  pastDeadline(): void {
    this.firedAt = this.clock.now();
  }
}

function setUp(durationMs = 1_000) {
  const clock = new FakeClock();
  const sweep = new DeadlineSweep(durationMs, clock);
  const attempt = () => new Attempt(clock);
  return { clock, sweep, attempt };
}

describe('DeadlineSweep', () => {
  it('fires each attempt at its own deadline, counted from its add, with one timer for all', () => {
    const { clock, sweep, attempt } = setUp();
    const a = attempt();
    const b = attempt();
    const start = clock.now();
    sweep.add(a);
    clock.advance(300);
    sweep.add(b);
    expect(clock.pending).toBe(1);
    clock.advance(699);
    expect(a.firedAt).toBeUndefined();
    clock.advance(1);
    expect(a.firedAt).toBe(start + 1_000);
    expect(b.firedAt).toBeUndefined();
    expect(clock.pending).toBe(1); // re-armed for b
    clock.advance(300);
    expect(b.firedAt).toBe(start + 1_300);
    expect(sweep.size).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('never fires a removed attempt, and stops its timer once none is left', () => {
    const { clock, sweep, attempt } = setUp();
    const a = attempt();
    const b = attempt();
    sweep.add(a);
    clock.advance(100);
    sweep.add(b);
    sweep.remove(a);
    expect(a.deadlineAt).toBeUndefined();
    clock.advance(900); // a's time: nothing fires, the timer waits for b
    expect(a.firedAt).toBeUndefined();
    expect(b.firedAt).toBeUndefined();
    sweep.remove(b);
    expect(sweep.size).toBe(0);
    expect(clock.pending).toBe(0);
    clock.advance(5_000);
    expect(b.firedAt).toBeUndefined();
  });

  it('fires every attempt due at once in one sweep, and a removal twice or after firing changes nothing', () => {
    const { clock, sweep, attempt } = setUp();
    const attempts = [attempt(), attempt(), attempt()];
    for (const a of attempts) sweep.add(a);
    const late = attempt();
    clock.advance(10);
    sweep.add(late);
    clock.advance(990);
    expect(attempts.map((a) => a.firedAt !== undefined)).toEqual([true, true, true]);
    expect(late.firedAt).toBeUndefined();
    sweep.remove(attempts[0]!);
    sweep.remove(attempts[0]!);
    expect(sweep.size).toBe(1);
    clock.advance(10);
    expect(late.firedAt).toBeDefined();
  });

  it('lets go of ended attempts behind a long one at its head, keeping the live ones', () => {
    const { clock, sweep, attempt } = setUp(60_000);
    const long = attempt();
    sweep.add(long);
    const live = attempt();
    for (let i = 0; i < 10_000; i++) {
      const short = attempt();
      sweep.add(short);
      if (i === 5_000) sweep.add(live);
      sweep.remove(short);
    }
    expect(sweep.size).toBe(2);
    // The FIFO was compacted: it holds about the live entries, not the 10,000 ended ones.
    expect((sweep as unknown as { entries: unknown[] }).entries.length).toBeLessThan(200);
    clock.advance(60_000);
    expect(long.firedAt).toBeDefined();
    expect(live.firedAt).toBeDefined();
  });

  it('stop() forgets every attempt and its timer', () => {
    const { clock, sweep, attempt } = setUp();
    const a = attempt();
    sweep.add(a);
    sweep.stop();
    expect(a.deadlineAt).toBeUndefined();
    expect(clock.pending).toBe(0);
    clock.advance(2_000);
    expect(a.firedAt).toBeUndefined();
    sweep.remove(a); // already forgotten: no effect
    expect(sweep.size).toBe(0);
  });

  it('keeps deadlines in order when an attempt is added with an earlier deadline than the last', () => {
    const { clock, sweep, attempt } = setUp();
    const a = attempt();
    const b = attempt();
    sweep.add(a);
    clock.time -= 500; // a clock that went back (a monotonic one never does)
    sweep.add(b);
    clock.advance(1_000); // b's deadline
    expect(b.firedAt).toBeDefined();
    expect(a.firedAt).toBeUndefined();
    clock.advance(500);
    expect(a.firedAt).toBeDefined();
  });
});
