import { claimedRowOf } from '../../lib/sql/claim.sql.js';

/**
 * A claimed row's three columns as claimJobs returns them: its other values joined by 0x1F (the kind
 * as its position in $2), its run lease, its args.
 */
const columns = (values: string[], runLease = '1', args: unknown = null): unknown[] => [
  values.join('\x1f'),
  runLease,
  args,
];

describe('claimedRowOf', () => {
  const values = ['q', ['first', 'second']] as const;

  it('reads a job from its packed values, run lease and args: numbers parsed, empty texts as null, kind and queue from the claim', () => {
    const plain = claimedRowOf(
      columns(['7', '2', '1', '25', '-3', '1796585299256.5', '1796585299257.25', '', ''], '1796585299256001', { n: 1 }),
      values,
    );
    expect(plain).toEqual({
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
    });
    expect(plain.kind).toBe(values[1][1]);
    const traced = claimedRowOf(
      columns([
        '8',
        '1',
        '3',
        '4',
        '0',
        '1.5',
        '2',
        '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        '0b8f3c52-6f7e-4d7b-9d8e-1f2a3b4c5d6e',
      ]),
      values,
    );
    expect(traced).toMatchObject({
      kind: 'first',
      args: null,
      attempt: 3,
      max_attempts: 4,
      priority: 0,
      created_ms: 1.5,
      run_at_ms: 2,
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      workflow_id: '0b8f3c52-6f7e-4d7b-9d8e-1f2a3b4c5d6e',
    });
  });

  it('refuses a row whose kind is not one of the claim’s, or whose values do not count nine', () => {
    const row = (kind: string, extra: string[] = []) =>
      columns(['7', kind, '1', '25', '0', '1', '1', '', '', ...extra]);
    expect(() => claimedRowOf(row('3'), values)).toThrow(/unreachable: a claimed row of 9 values, kind 3 of 2/);
    expect(() => claimedRowOf(row('0'), values)).toThrow(/kind 0 of 2/);
    expect(() => claimedRowOf(row('1', ['extra']), values)).toThrow(/of 10 values/);
  });
});
