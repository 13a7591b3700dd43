import type { Exec } from '../support/job-factory.js';

/** Seeds `count` available jobs of `key` (null: no key) in `queue`, one statement; returns their ids in order. */
export async function seedKeyed(
  exec: Exec,
  key: string | null,
  count = 1,
  { queue = 'q', kind = 'k', priority = 0 }: { queue?: string; kind?: string; priority?: number } = {},
): Promise<string[]> {
  const rows = await exec(
    `INSERT INTO awa.jobs (kind, queue, concurrency_key, priority)
     SELECT $1, $2, $3, $4 FROM generate_series(1, $5) RETURNING id::text`,
    [kind, queue, key, priority, count],
  );
  return rows.map((r) => r.id as string);
}

/**
 * Inserts the awa.flow_keys row of `key` in queue `q`: an idle one (nothing running or waiting, no
 * hold or limit, last served 2 hours ago), with `columns` (SQL expressions) overriding.
 */
export async function seedKeyRow(exec: Exec, key: string, columns: Record<string, string> = {}): Promise<void> {
  const row: Record<string, string> = {
    running: '0',
    max_running: 'NULL',
    has_waiting: 'false',
    saturated: 'false',
    held_until: 'NULL',
    last_claimed_at: `now() - interval '2 hours'`,
    ...columns,
  };
  await exec(
    `INSERT INTO awa.flow_keys (queue, key, ${Object.keys(row).join(', ')}) VALUES ('q', $1, ${Object.values(row).join(', ')})`,
    [key],
  );
}

/**
 * Empties the flow-control tables (the SQL fixture's reset leaves them). In the order a live app's
 * flow claim reads them (queues, then flow_keys): the other order can deadlock with it.
 */
export async function resetFlow(exec: Exec): Promise<void> {
  await exec('TRUNCATE awa.queues, awa.flow_keys');
}

/**
 * The largest number of `[start, end)` intervals of one group that overlap at any instant.
 * Ends sort before starts at the same instant: an attempt that ended then no longer runs.
 */
export function maxOverlap(intervals: Array<{ group: string; start: number; end: number }>): number {
  const byGroup = new Map<string, Array<[number, number]>>();
  for (const { group, start, end } of intervals) {
    const events = byGroup.get(group) ?? [];
    events.push([start, 1], [end, -1]);
    byGroup.set(group, events);
  }
  let max = 0;
  for (const events of byGroup.values()) {
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    for (const [, delta] of events) max = Math.max(max, (open += delta));
  }
  return max;
}

/** The most of `starts` (ms, any order) inside one half-open window [x, x + periodMs). */
export function maxInWindow(starts: number[], periodMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let max = 0;
  for (let lo = 0, hi = 0; hi < sorted.length; hi++) {
    while (sorted[hi]! - sorted[lo]! >= periodMs) lo++;
    max = Math.max(max, hi - lo + 1);
  }
  return max;
}
