import { AwaEvents, type AwaEvent } from '../../lib/events/awa-events.js';

const claimed = (count: number): AwaEvent => ({ type: 'claimed', queue: 'q', count });

/** The core's event observer: what telemetry subscribes to. */
describe('AwaEvents', () => {
  it('hands each event to every listener, in order, until a listener unsubscribes', () => {
    const events = new AwaEvents();
    const seen: string[] = [];
    const stopA = events.subscribe((e) => seen.push(`a${e.type === 'claimed' ? e.count : ''}`));
    events.subscribe((e) => seen.push(`b${e.type === 'claimed' ? e.count : ''}`));
    events.emit(claimed(1));
    stopA();
    events.emit(claimed(2));
    expect(seen).toEqual(['a1', 'b1', 'b2']);
  });

  it('ignores a listener that throws, so an observer can never break a job', () => {
    const events = new AwaEvents();
    const seen: AwaEvent[] = [];
    events.subscribe(() => {
      throw new Error('observer bug');
    });
    events.subscribe((e) => seen.push(e));
    expect(() => events.emit(claimed(3))).not.toThrow();
    expect(seen).toEqual([claimed(3)]);
  });

  it('without trace hooks, inserts with no traceparent and runs the handler as it is', async () => {
    const events = new AwaEvents();
    const traceparents: Array<string | undefined> = [];
    const result = await events.send([{ kind: 'k', queue: 'q' }], async (traceparent) => {
      traceparents.push(traceparent);
      return 'inserted';
    });
    expect(result).toBe('inserted');
    expect(traceparents).toEqual([undefined]);
    const handler = () => 'ran';
    expect(events.process({ observed: {} as never }, handler)).toBe(handler);
  });

  it('with trace hooks installed, wraps inserts and handlers with them until they are removed', async () => {
    const events = new AwaEvents();
    const wrapped = () => 'wrapped';
    events.traceWith({ send: (_jobs, insert) => insert('00-trace'), process: () => wrapped });
    expect(await events.send([], async (traceparent) => traceparent)).toBe('00-trace');
    expect(events.process({ observed: {} as never }, () => 'plain')).toBe(wrapped);
    events.traceWith(undefined);
    expect(await events.send([], async (traceparent) => traceparent)).toBeUndefined();
  });

  it('says whether anything observes the core: a listener or trace hooks', () => {
    const events = new AwaEvents();
    expect(events.observed).toBe(false);
    const stop = events.subscribe(() => undefined);
    expect(events.observed).toBe(true);
    stop();
    expect(events.observed).toBe(false);
    events.traceWith({ send: (_jobs, insert) => insert(), process: (_job, invoke) => invoke });
    expect(events.observed).toBe(true);
  });
});
