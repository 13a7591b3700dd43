import {
  bufferWaitLimit,
  keepDeadlineWithin,
  ENTRY_CHECK_SLACK_MS,
  MIN_RATE_ENTRY_WAIT_MS,
  RateBufferAllowance,
  RateClaimAllowance,
  rateEntryWait,
  RateEntryWait,
  rateEntryWaitMax,
  rateLogExtension,
} from '../../lib/worker/prefetch-limits.js';

describe('prefetch limits', () => {
  it('lets a buffered job wait its deadline minus the room to move it, or 60 s without a deadline', () => {
    expect(bufferWaitLimit(300_000)).toBe(290_000);
    expect(bufferWaitLimit(4_000)).toBe(2_000);
    expect(bufferWaitLimit(0)).toBe(60_000);
    expect(keepDeadlineWithin(300_000)).toBe(1_000);
    expect(keepDeadlineWithin(5_000)).toBe(50);
  });

  describe('rateEntryWait', () => {
    it('is 1/40 of the period for a rate-limited queue, with or without prefetch', () => {
      expect(rateEntryWait({ period: 1_000 }, 300_000)).toBe(25);
      expect(rateEntryWait({ period: 60_000 }, 0)).toBe(1_500);
    });

    it('is at least 10 ms, the time a claim takes to come back and be dispatched', () => {
      expect(rateEntryWait({ period: 100 }, 300_000)).toBe(MIN_RATE_ENTRY_WAIT_MS);
      expect(rateEntryWait({ period: 1 }, 0)).toBe(MIN_RATE_ENTRY_WAIT_MS);
    });

    it('never exceeds the buffer wait limit the deadline allows', () => {
      expect(rateEntryWait({ period: 3_600_000 }, 4_000)).toBe(bufferWaitLimit(4_000));
      expect(rateEntryWait({ period: 1_000 }, 4)).toBe(bufferWaitLimit(4));
    });

    it('is 0 without a rate limit', () => {
      expect(rateEntryWait(null, 300_000)).toBe(0);
    });
  });

  describe('rateLogExtension', () => {
    it("widens the claim's log by the entry wait and the slack of the entry check, never 0 with a rate limit", () => {
      expect(rateLogExtension(rateEntryWait({ period: 1_000 }, 300_000))).toBe(25 + ENTRY_CHECK_SLACK_MS);
      expect(rateLogExtension(rateEntryWait({ period: 1_000 }, 0.5))).toBeGreaterThan(ENTRY_CHECK_SLACK_MS);
      expect(rateLogExtension(400)).toBe(400 + ENTRY_CHECK_SLACK_MS);
      expect(rateLogExtension(0)).toBe(0);
    });
  });

  describe('rateEntryWaitMax', () => {
    it('is the period, at least 1 s, within the buffer wait limit, and never under the base wait', () => {
      expect(rateEntryWaitMax({ period: 1_000 }, 0)).toBe(1_000);
      expect(rateEntryWaitMax({ period: 100 }, 0)).toBe(1_000);
      expect(rateEntryWaitMax({ period: 30_000 }, 0)).toBe(30_000);
      expect(rateEntryWaitMax({ period: 3_600_000 }, 0)).toBe(bufferWaitLimit(0));
      expect(rateEntryWaitMax({ period: 1_000 }, 600)).toBe(bufferWaitLimit(600));
      expect(rateEntryWaitMax({ period: 1_000 }, 4)).toBe(rateEntryWait({ period: 1_000 }, 4));
    });
  });

  describe('RateEntryWait', () => {
    /** Many claims in a row whose jobs all started in time, each with `observe` first. */
    const settle = (wait: RateEntryWait, observe: (wait: RateEntryWait) => void) => {
      for (let i = 0; i < 100; i++) {
        observe(wait);
        wait.allStarted();
      }
    };

    it('doubles up to its most when a job claimed with the current wait went back late', () => {
      const wait = new RateEntryWait(25, 150);
      const seen = [];
      for (let i = 0; i < 4; i++) {
        wait.late(wait.current);
        seen.push(wait.current);
      }
      expect(seen).toEqual([50, 100, 150, 150]);
    });

    it('does not double again for a job claimed before the last doubling', () => {
      const wait = new RateEntryWait(25, 1_000);
      wait.late(25);
      wait.late(25); // claimed with 25 ms, came back after the first doubling
      expect(wait.current).toBe(50);
    });

    it('eases back toward twice the slowest entry once claims start in time, never under its base', () => {
      const wait = new RateEntryWait(25, 1_000);
      for (let i = 0; i < 4; i++) wait.late(wait.current); // 400
      wait.entered(20);
      wait.entered(60);
      wait.allStarted();
      expect(wait.current).toBe(400 - (400 - 120) / 4);
      settle(wait, (w) => w.entered(60));
      expect(wait.current).toBeCloseTo(120);
      settle(wait, (w) => w.entered(1));
      expect(wait.current).toBeCloseTo(25);
    });

    it("lengthens at once to twice a claim's round trip longer than half the wait, with or without jobs", () => {
      const wait = new RateEntryWait(25, 1_000);
      wait.roundTrip(10);
      expect(wait.current).toBe(25);
      wait.roundTrip(70);
      expect(wait.current).toBe(140);
      wait.roundTrip(800);
      expect(wait.current).toBe(1_000);
      settle(wait, (w) => w.roundTrip(5));
      expect(wait.current).toBeCloseTo(25);
    });

    it('lengthens at once to twice an entry that came close to the wait', () => {
      const wait = new RateEntryWait(25, 1_000);
      wait.entered(20);
      wait.allStarted();
      expect(wait.current).toBe(40);
    });
  });

  describe('RateBufferAllowance', () => {
    it('starts at prefetch, halves when jobs went back, grows by an eighth up to prefetch when all started', () => {
      const allowance = new RateBufferAllowance(100);
      expect(allowance.current).toBe(100);
      allowance.gaveBack();
      expect(allowance.current).toBe(50);
      allowance.allStarted();
      expect(allowance.current).toBe(57);
      for (let i = 0; i < 10; i++) allowance.allStarted();
      expect(allowance.current).toBe(100);
    });

    it('never falls below its floor', () => {
      const allowance = new RateBufferAllowance(3, 1);
      for (let i = 0; i < 3; i++) allowance.gaveBack();
      expect(allowance.current).toBe(1);
    });

    it('can fall to 0 and grow again from 1', () => {
      const allowance = new RateBufferAllowance(3);
      for (let i = 0; i < 3; i++) allowance.gaveBack();
      expect(allowance.current).toBe(0);
      allowance.allStarted();
      expect(allowance.current).toBe(1);
      allowance.allStarted();
      expect(allowance.current).toBe(2);
      allowance.allStarted();
      expect(allowance.current).toBe(3);
    });
  });

  describe('RateClaimAllowance', () => {
    it('shrinks the prefetch first, then the slots down to 1; grows the slots back first, then the prefetch', () => {
      const allowance = new RateClaimAllowance(4, 2, 25, 1_000);
      expect([allowance.claim, allowance.prefetch]).toEqual([6, 2]);
      allowance.gaveBack();
      allowance.gaveBack();
      expect([allowance.claim, allowance.prefetch]).toEqual([4, 0]);
      for (let i = 0; i < 5; i++) allowance.gaveBack();
      expect([allowance.claim, allowance.prefetch]).toEqual([1, 0]);
      allowance.allStarted();
      expect([allowance.claim, allowance.prefetch]).toEqual([2, 0]);
      allowance.allStarted();
      allowance.allStarted();
      expect([allowance.claim, allowance.prefetch]).toEqual([4, 0]);
      allowance.allStarted();
      expect([allowance.claim, allowance.prefetch]).toEqual([5, 1]);
    });

    it('without prefetch, bounds a claim by the slot allowance alone', () => {
      const allowance = new RateClaimAllowance(20, 0, 25, 1_000);
      expect(allowance.claim).toBe(20);
      allowance.gaveBack();
      expect([allowance.claim, allowance.prefetch]).toEqual([10, 0]);
    });

    it('pauses between claims once even one job per claim goes back: from the least pause, doubling, up to the most', () => {
      const allowance = new RateClaimAllowance(2, 0, 25, 150);
      allowance.gaveBack();
      expect([allowance.claim, allowance.pause]).toEqual([1, 0]);
      const pauses = [];
      for (let i = 0; i < 5; i++) {
        allowance.gaveBack();
        pauses.push(allowance.pause);
      }
      expect(pauses).toEqual([25, 50, 100, 150, 150]);
      expect(allowance.claim).toBe(1);
      allowance.allStarted();
      expect([allowance.claim, allowance.pause]).toEqual([2, 0]);
    });
  });
});
