import { unpackClaimedRows } from '../../lib/sql/claim.sql.js';

/** A packed claimed row as claimJobs writes it: its values joined by 0x1F (the kind as its position in $2). */
const packed = (...values: string[]) => values.join('\x1f');

describe('unpackClaimedRows', () => {
  const values = ['q', ['first', 'second']] as const;

  it('reads each job from its values: numbers parsed, args as JSON, empty texts as null, kind and queue from the claim', () => {
    const text = [
      packed('7', '2', '1', '25', '-3', '1796585299256001', '1796585299256.5', '1796585299257.25', '', '', '{"n":1}'),
      packed(
        '8',
        '1',
        '3',
        '4',
        '0',
        '1796585299256002',
        '1.5',
        '2',
        '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        '0b8f3c52-6f7e-4d7b-9d8e-1f2a3b4c5d6e',
        '[1,"\\u001e"]',
      ),
    ].join('\x1e');
    const rows = unpackClaimedRows(text, values);
    expect(rows).toEqual([
      {
        id: '7',
        kind: 'second',
        queue: 'q',
        args: { n: 1 },
        attempt: 1,
        max_attempts: 25,
        priority: -3,
        run_lease: '1796585299256001',
        created_ms: 1796585299256.5,
        run_at_ms: 1796585299257.25,
        traceparent: null,
        workflow_id: null,
      },
      {
        id: '8',
        kind: 'first',
        queue: 'q',
        args: [1, '\x1e'],
        attempt: 3,
        max_attempts: 4,
        priority: 0,
        run_lease: '1796585299256002',
        created_ms: 1.5,
        run_at_ms: 2,
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        workflow_id: '0b8f3c52-6f7e-4d7b-9d8e-1f2a3b4c5d6e',
      },
    ]);
    expect(rows[0]!.kind).toBe(values[1][1]);
  });

  it('refuses a row whose kind is not one of the claim’s or whose values do not count eleven', () => {
    const row = (kind: string) => packed('7', kind, '1', '25', '0', '1', '1', '1', '', '', 'null');
    expect(() => unpackClaimedRows(row('3'), values)).toThrow(/unreachable: a claimed row/);
    expect(() => unpackClaimedRows(row('0'), values)).toThrow(/unreachable: a claimed row/);
    expect(() => unpackClaimedRows(`${row('1')}\x1fextra`, values)).toThrow(/of 12 values/);
  });
});
