import { TraceFlags } from '@opentelemetry/api';
import { formatTraceparent, parseTraceparent } from '../../lib/telemetry/traceparent.js';

const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
const spanId = '00f067aa0ba902b7';

describe('W3C traceparent', () => {
  it('formats a sampled span context as version 00 and parses it back as a remote context', () => {
    const text = formatTraceparent({ traceId, spanId, traceFlags: TraceFlags.SAMPLED });
    expect(text).toBe(`00-${traceId}-${spanId}-01`);
    expect(parseTraceparent(text)).toEqual({ traceId, spanId, traceFlags: 1, isRemote: true });
  });

  it('keeps an unsampled flag', () => {
    expect(formatTraceparent({ traceId, spanId, traceFlags: TraceFlags.NONE })).toBe(`00-${traceId}-${spanId}-00`);
  });

  it('stores nothing for the invalid context of a no-op span', () => {
    expect(formatTraceparent({ traceId: '0'.repeat(32), spanId: '0'.repeat(16), traceFlags: 0 })).toBeUndefined();
  });

  it.each([null, undefined, '', 'garbage', `01-${traceId}-${spanId}-01`, `00-${'0'.repeat(32)}-${spanId}-01`])(
    'ignores a missing or malformed stored value (%p)',
    (text) => expect(parseTraceparent(text)).toBeUndefined(),
  );
});
