import { type BufferHome, type BufferLimits, PrefetchBuffer } from '../../lib/worker/prefetch-buffer.js';
import { FakeClock } from './fake-clock.js';
import { bufferWaitLimit, rateEntryWait } from '../../lib/worker/prefetch-limits.js';

/** A claimed job as the buffer sees it. */
class FakeJob {
  bufferedIn: BufferHome<FakeJob> | undefined;
  enterWithin = 0;
  constructor(
    readonly name: string,
    readonly claimedAt: number,
  ) {}
}

const PLAIN: BufferLimits = {
  concurrency: 2,
  prefetch: 4,
  rateLimit: null,
  deadlineDuration: 60_000,
  pollInterval: 1_000,
};
const RATED: BufferLimits = { ...PLAIN, rateLimit: { period: 1_000 } };

function setUp(limits: BufferLimits) {
  const clock = new FakeClock();
  const givenBack: string[][] = [];
  const dropped: string[] = [];
  const owner = {
    pumps: 0,
    giveBack: (jobs: FakeJob[]) => givenBack.push(jobs.map((j) => j.name)),
    dropped: (job: FakeJob) => dropped.push(job.name),
    pump: () => {
      owner.pumps++;
      buffer.expire();
      buffer.pumped();
    },
  };
  const buffer = new PrefetchBuffer<FakeJob>(limits, owner, clock);
  const claim = (...names: string[]) => names.map((name) => addJob(name));
  const addJob = (name: string) => {
    const job = new FakeJob(name, clock.time);
    buffer.add(job);
    return job;
  };
  /** What a pump of `free` slots starts. */
  const pump = (free: number) => {
    buffer.expire();
    const started: string[] = [];
    for (let job; started.length < free && (job = buffer.take()) !== undefined;) started.push(job.name);
    buffer.pumped();
    return started;
  };
  return { clock, buffer, owner, givenBack, dropped, claim, pump };
}

describe('PrefetchBuffer', () => {
  it('hands out claimed jobs oldest first, each no longer pointing at it once taken', () => {
    const { buffer, claim, pump } = setUp(PLAIN);
    const jobs = claim('a', 'b', 'c');
    expect(jobs.every((j) => j.bufferedIn === buffer)).toBe(true);
    expect(pump(2)).toEqual(['a', 'b']);
    expect([jobs[0]!.bufferedIn, jobs[1]!.bufferedIn]).toEqual([undefined, undefined]);
    expect(jobs[2]!.bufferedIn).toBe(buffer);
    expect(buffer.size).toBe(1);
  });

  it('claims the free slots plus prefetch, less what it holds, and nothing while over half the prefetch is buffered', () => {
    const { buffer, claim } = setUp(PLAIN);
    expect(buffer.claimSize(0, 0)).toBe(6);
    expect(buffer.claimSize(2, 0)).toBe(4);
    claim('a', 'b');
    expect(buffer.claimSize(2, 0)).toBe(2);
    claim('c');
    expect(buffer.claimSize(1, 0)).toBe(0);
  });

  it('claims later, at a quarter of the prefetch, once its handlers drain the buffer far faster than claims fill it', () => {
    const { buffer, claim, pump } = setUp(PLAIN);
    claim('a', 'b');
    expect(buffer.claimSize(2, 0)).toBe(2); // half the prefetch buffered: claim
    buffer.handlerSettled(0.01);
    buffer.claimReturned(2, 5);
    expect(buffer.claimSize(2, 0)).toBe(0);
    expect(buffer.aboveRefill).toBe(true); // the worker does not even start a claim
    pump(1);
    expect(buffer.claimSize(2, 0)).toBe(3);
    expect(buffer.aboveRefill).toBe(false);
  });

  it('keeps claiming at half the prefetch when rate-limited (its allowance sizes those claims)', () => {
    const { buffer, claim } = setUp(RATED);
    buffer.handlerSettled(0.01);
    buffer.claimReturned(2, 5);
    claim('a', 'b');
    expect(buffer.claimSize(2, 0)).toBe(2);
  });

  it('claims no more while unwritten results fill an allowance the size of the slots and buffer', () => {
    const { buffer } = setUp(PLAIN);
    expect(buffer.claimSize(0, 6)).toBe(6);
    expect(buffer.claimSize(0, 9)).toBe(3);
    expect(buffer.claimSize(0, 12)).toBe(0);
  });

  it('gives back, oldest first, the jobs that waited past the wait limit, then claims only free slots until a slot frees', () => {
    const { clock, buffer, givenBack, claim, pump } = setUp(PLAIN);
    const [a, b] = claim('a', 'b');
    clock.advance(1_000);
    claim('c');
    clock.advance(bufferWaitLimit(PLAIN.deadlineDuration) - 999);
    expect(pump(1)).toEqual(['c']);
    expect(givenBack).toEqual([['a', 'b']]);
    expect([a!.bufferedIn, b!.bufferedIn]).toEqual([undefined, undefined]);
    expect(buffer.claimSize(1, 0)).toBe(1);
    buffer.slotFreed();
    expect(buffer.claimSize(1, 0)).toBe(5);
  });

  it('moves the lease deadline of a job that waited more than 1% of the deadline, and keeps it after a short wait', () => {
    const { clock, buffer, claim } = setUp(PLAIN);
    claim('long');
    clock.advance(601);
    claim('short');
    buffer.expire();
    const long = buffer.take()!;
    const short = buffer.take()!;
    expect([buffer.movesDeadline(long), buffer.movesDeadline(short)]).toEqual([true, false]);
  });

  it('never moves the lease deadline of a queue without a deadline', () => {
    const { clock, buffer, claim } = setUp({ ...PLAIN, deadlineDuration: 0 });
    claim('a');
    clock.advance(30_000);
    buffer.expire();
    expect(buffer.movesDeadline(buffer.take()!)).toBe(false);
  });

  it('lets a buffered job that was cancelled or lost out to its owner, and ignores a second leave once it left', () => {
    const { dropped, claim, pump } = setUp(PLAIN);
    const [a, b] = claim('a', 'b', 'c');
    const homeOfB = b!.bufferedIn!;
    homeOfB.leave(b!);
    homeOfB.leave(b!);
    expect(dropped).toEqual(['b']);
    expect(pump(1)).toEqual(['a']);
    a!.bufferedIn?.leave(a!);
    expect(dropped).toEqual(['b']);
    expect(pump(5)).toEqual(['c']);
  });

  it('drains every unstarted job on stop, each no longer pointing at it, and stops the give-back timer', () => {
    const { clock, buffer, owner, claim, pump } = setUp(RATED);
    const jobs = claim('a', 'b', 'c');
    expect(pump(1)).toEqual(['a']);
    expect(clock.pending).toBe(1);
    expect(buffer.drain().map((j) => j.name)).toEqual(['b', 'c']);
    expect(jobs.map((j) => j.bufferedIn)).toEqual([undefined, undefined, undefined]);
    expect([buffer.size, clock.pending]).toEqual([0, 0]);
    clock.advance(60_000);
    expect(owner.pumps).toBe(0);
  });

  describe('a rate-limited queue', () => {
    const entryWait = rateEntryWait(RATED.rateLimit, RATED.deadlineDuration);

    it('waits its entry wait D at most, not the deadline: the oldest job left goes back once D is over', () => {
      const { clock, buffer, owner, givenBack, claim, pump } = setUp(RATED);
      expect(buffer.waitLimit).toBe(entryWait);
      claim('a', 'b', 'c');
      expect(pump(2)).toEqual(['a', 'b']);
      clock.advance(entryWait - 1);
      expect(givenBack).toEqual([]);
      clock.advance(2);
      expect(owner.pumps).toBe(1);
      expect(givenBack).toEqual([['c']]);
      expect(clock.pending).toBe(0);
    });

    it('checks each job on the clock as it is taken: one whose D ran out while others started goes back, not out', () => {
      const { clock, buffer, givenBack, claim } = setUp(RATED);
      claim('a', 'b');
      buffer.expire();
      expect(buffer.take()?.name).toBe('a');
      clock.time += entryWait + 1; // the handler of a kept the event loop
      expect(buffer.take()).toBeUndefined();
      expect(givenBack).toEqual([['b']]);
    });

    it('refuses a handler entry past D; a queue without a rate limit never does', () => {
      const rated = setUp(RATED);
      const [a] = rated.claim('a');
      rated.pump(1);
      expect(rated.buffer.lateToEnter(a!)).toBe(false);
      rated.clock.time += entryWait + 1;
      expect(rated.buffer.lateToEnter(a!)).toBe(true);
      const plain = setUp(PLAIN);
      const [b] = plain.claim('b');
      plain.pump(1);
      plain.clock.time += 50_000;
      expect(plain.buffer.lateToEnter(b!)).toBe(false);
    });

    it('halves what it buffers after a give-back, and grows again when an emptied buffer had all started in time', () => {
      const { clock, buffer, claim, pump } = setUp(RATED);
      expect(buffer.claimSize(0, 0)).toBe(6);
      claim('a', 'b', 'c', 'd', 'e', 'f');
      expect(pump(2)).toEqual(['a', 'b']);
      buffer.claimed(true);
      clock.advance(entryWait + 1);
      buffer.slotFreed();
      expect(buffer.claimSize(0, 0)).toBe(4); // prefetch 4 → 2
      claim('g', 'h');
      expect(pump(2)).toEqual(['g', 'h']);
      buffer.claimed(false);
      claim('i');
      pump(0);
      buffer.claimed(false);
      expect(pump(1)).toEqual(['i']);
      expect(buffer.claimSize(0, 0)).toBe(5); // the emptied buffer grew prefetch 2 → 3
    });

    it('grows after a full claim whose jobs all started at once, not after one whose job went back', () => {
      const { clock, buffer, claim, pump } = setUp({ ...RATED, prefetch: 0 });
      const [a] = claim('a', 'b');
      pump(2);
      clock.time += entryWait + 1;
      expect(buffer.lateToEnter(a!)).toBe(true);
      buffer.gaveBackLate([a!]);
      buffer.claimed(true);
      buffer.slotFreed();
      expect(buffer.claimSize(0, 0)).toBe(1); // the slot allowance 2 → 1
      claim('c');
      expect(pump(1)).toEqual(['c']);
      buffer.claimed(true);
      expect(buffer.claimSize(0, 0)).toBe(2);
    });

    it("sends the claim after a give-back with a doubled entry wait, and holds each job to its own claim's wait", () => {
      const { clock, buffer, givenBack, claim, pump } = setUp({ ...RATED, prefetch: 0 });
      expect(buffer.nextEntryWait).toBe(entryWait);
      const [a] = claim('a');
      clock.time += entryWait + 1; // a slow round trip
      expect(pump(1)).toEqual([]);
      expect(givenBack).toEqual([['a']]);
      expect(a!.enterWithin).toBe(entryWait);
      expect(buffer.nextEntryWait).toBe(2 * entryWait);
      const [b] = claim('b');
      expect(b!.enterWithin).toBe(2 * entryWait);
      clock.time += entryWait + 1; // as slow again: within the longer wait now
      expect(buffer.lateToEnter(b!)).toBe(false);
      expect(pump(1)).toEqual(['b']);
    });

    it("sends its next claim with twice a slow claim's round trip, before any job went back for it", () => {
      const { buffer, givenBack } = setUp({ ...RATED, prefetch: 0 });
      buffer.claimReturned(0, 3 * entryWait); // a claim that found the limit used up, slowly
      expect(buffer.nextEntryWait).toBe(6 * entryWait);
      expect(givenBack).toEqual([]);
    });

    it('pauses its claims once even single-job claims go back', () => {
      const { buffer } = setUp({ ...RATED, concurrency: 1, prefetch: 0 });
      expect(buffer.claimPause()).toBeLessThanOrEqual(0);
      buffer.gaveBackLate([new FakeJob('a', 0)]);
      expect(buffer.claimPause()).toBe(entryWait);
      buffer.gaveBackLate([new FakeJob('b', 0)]);
      expect(buffer.claimPause()).toBe(2 * entryWait);
    });
  });
});
