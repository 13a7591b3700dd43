import { RefillPoint } from '../../lib/worker/refill-point.js';

describe('RefillPoint', () => {
  it('claims at half the prefetch until it has seen a claim and a handler', () => {
    const point = new RefillPoint(24);
    expect(point.level(500)).toBe(250);
    point.claimReturned(250, 8);
    expect(point.level(500)).toBe(250);
    const handlersOnly = new RefillPoint(24);
    handlersOnly.handlerSettled(0.02);
    expect(handlersOnly.level(500)).toBe(250);
  });

  it('claims at a quarter of the prefetch when handlers drain the buffer far faster than claims fill it', () => {
    const point = new RefillPoint(24);
    point.handlerSettled(0.02); // no-op handlers: 1,200 jobs per ms of capacity
    point.claimReturned(262, 7.8); // 34 jobs per ms of supply
    expect(point.level(500)).toBe(125);
  });

  it('keeps enough buffered to outlast two claim round trips where the handlers are the bottleneck', () => {
    const point = new RefillPoint(24);
    point.handlerSettled(1); // handlers that wait 1 ms on I/O: 24 jobs per ms
    point.claimReturned(250, 5); // 50 jobs per ms: the claims keep up
    expect(point.level(500)).toBe(240); // 2 × 24 × 5
  });

  it('stays between a quarter and half of the prefetch', () => {
    const slowClaims = new RefillPoint(24);
    slowClaims.handlerSettled(1);
    slowClaims.claimReturned(250, 10); // 25 per ms, just above the handlers' 24
    expect(slowClaims.level(500)).toBe(250); // 480 wanted, half at most
    const fastClaims = new RefillPoint(24);
    fastClaims.handlerSettled(10);
    fastClaims.claimReturned(250, 1);
    expect(fastClaims.level(500)).toBe(125); // 4.8 wanted, a quarter at least
  });

  it('follows a change of workload, and ignores claims that found nothing', () => {
    const point = new RefillPoint(24);
    point.handlerSettled(1);
    point.claimReturned(250, 5);
    expect(point.level(500)).toBe(240);
    point.claimReturned(0, 50); // an empty queue's claim says nothing of the supply
    expect(point.level(500)).toBe(240);
    for (let i = 0; i < 1_000; i++) point.handlerSettled(0.01);
    expect(point.level(500)).toBe(125);
  });
});
