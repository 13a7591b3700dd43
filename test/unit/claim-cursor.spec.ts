import { ClaimCursor, MAX_WHOLE_READ_INTERVAL_MS } from '../../lib/worker/claim-cursor.js';
import { INDEX_START, type ClaimedJobRow } from '../../lib/sql/claim.sql.js';

/** A claimed row with the fields the cursor reads. */
const row = (kind: string, priority: number, runAtMs: number, id: string): ClaimedJobRow => ({
  id,
  kind,
  queue: 'q',
  args: {},
  attempt: 1,
  max_attempts: 25,
  priority,
  run_lease: '1',
  created_ms: runAtMs,
  run_at_ms: runAtMs,
  traceparent: null,
  workflow_id: null,
});

const WHOLE = [[INDEX_START.priority], [INDEX_START.runAtUs], [INDEX_START.id]];

describe('ClaimCursor', () => {
  let now: number;
  const cursor = () => new ClaimCursor(() => now);
  beforeEach(() => (now = 1_000));

  it('reads the whole index first, then after the last key it claimed, to the microsecond', () => {
    const c = cursor();
    expect(c.next(['a'])).toEqual(WHOLE);
    // Rows come back in no particular order: the cursor takes the greatest (priority, run_at, id).
    c.claimed([row('a', 0, 5_000.7, '98'), row('a', 0, 5_000.7, '100'), row('a', 0, 4_999.2, '120')], 2);
    now += 1;
    expect(c.next(['a'])).toEqual([[0], [5_000_700], ['100']]);
  });

  it('recovers run_at to the microsecond from the float of epoch ms the claim returns', () => {
    const c = cursor();
    c.next(['a']);
    // 2026-12-03T12:00:00.123457Z: as a float of ms it is 1796299200123.457 to within a quarter of a microsecond.
    c.claimed([row('a', 0, 1_796_299_200_123.457, '1')], 1);
    now += 1;
    expect(c.next(['a'])).toEqual([[0], [1_796_299_200_123_457], ['1']]);
  });

  it('orders keys by priority, then run_at, then id (as numbers, not as text)', () => {
    const c = cursor();
    c.next(['a']);
    c.claimed([row('a', 2, 1_000, '7'), row('a', 1, 9_000, '8'), row('a', 2, 1_000, '10'), row('a', 2, 999, '11')], 1);
    now += 1;
    expect(c.next(['a'])).toEqual([[2], [1_000_000], ['10']]);
  });

  it('keeps a cursor per kind, and reads a kind it has not claimed yet from the start', () => {
    const c = cursor();
    c.next(['a', 'b']);
    c.claimed([row('a', 0, 2_000, '5')], 1);
    now += 1;
    expect(c.next(['a', 'b'])).toEqual([
      [0, INDEX_START.priority],
      [2_000_000, INDEX_START.runAtUs],
      ['5', INDEX_START.id],
    ]);
    // A read from the cursor moves only the kinds it returned rows of.
    c.claimed([row('b', 1, 3_000, '9')], 1);
    now += 1;
    expect(c.next(['a', 'b'])).toEqual([
      [0, 1],
      [2_000_000, 3_000_000],
      ['5', '9'],
    ]);
  });

  it('reads the whole index again once 20 times as long as the last whole read took has passed', () => {
    const c = cursor();
    c.next(['a']);
    c.claimed([row('a', 0, 2_000, '5')], 3); // a whole read of 3 ms: the next one in 60 ms
    now += 59;
    expect(c.next(['a'])).toEqual([[0], [2_000_000], ['5']]);
    c.claimed([row('a', 0, 2_500, '6')], 1);
    now += 1;
    expect(c.next(['a'])).toEqual(WHOLE);
    // A whole read forgets the cursors: they are set again from what it returned.
    c.claimed([row('a', 0, 1_000, '3')], 1);
    now += 1;
    expect(c.next(['a'])).toEqual([[0], [1_000_000], ['3']]);
  });

  it('waits at most MAX_WHOLE_READ_INTERVAL_MS for the next whole read, however long the last one took', () => {
    const c = cursor();
    c.next(['a']);
    c.claimed([row('a', 0, 2_000, '5')], 2_000);
    now += MAX_WHOLE_READ_INTERVAL_MS - 1;
    expect(c.next(['a'])).not.toEqual(WHOLE);
    c.claimed([], 1);
    now += 1;
    expect(c.next(['a'])).toEqual(WHOLE);
  });

  it('an idle worker reads the whole index: a claim that fails or finds nothing leaves nothing to skip', () => {
    const c = cursor();
    c.next(['a']);
    c.claimed([], 1); // nothing claimed: no cursor to read from
    now += 1;
    expect(c.next(['a'])).toEqual(WHOLE);
  });
});
