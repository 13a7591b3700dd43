import {
  bufferWaitLimit,
  keepDeadlineWithin,
  RateBufferAllowance,
  rateBufferWait,
} from '../../lib/worker/prefetch-limits.js';

describe('prefetch limits', () => {
  it('lets a buffered job wait its deadline minus the room to move it, or 60 s without a deadline', () => {
    expect(bufferWaitLimit(300_000)).toBe(290_000);
    expect(bufferWaitLimit(4_000)).toBe(2_000);
    expect(bufferWaitLimit(0)).toBe(60_000);
    expect(keepDeadlineWithin(300_000)).toBe(1_000);
    expect(keepDeadlineWithin(5_000)).toBe(50);
  });

  describe('rateBufferWait', () => {
    it('is 1/40 of the period for a rate-limited queue with prefetch', () => {
      expect(rateBufferWait({ period: 1_000 }, 500, 300_000)).toBe(25);
      expect(rateBufferWait({ period: 60_000 }, 1, 0)).toBe(1_500);
    });

    it('never exceeds the buffer wait limit the deadline allows', () => {
      expect(rateBufferWait({ period: 3_600_000 }, 10, 4_000)).toBe(bufferWaitLimit(4_000));
    });

    it('is 0 (the claim counts over the period alone) without prefetch or without a rate limit', () => {
      expect(rateBufferWait({ period: 1_000 }, 0, 300_000)).toBe(0);
      expect(rateBufferWait(null, 500, 300_000)).toBe(0);
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
});
