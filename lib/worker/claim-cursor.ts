import { fromIndexStart, INDEX_START, type ClaimAfter, type PlainClaimedRow } from '../sql/claim.sql.js';

/** A kind's position in the claim index: the (priority, run_at, id) of the last job this worker claimed. */
interface IndexKey {
  priority: number;
  /** run_at in epoch microseconds. */
  runAtUs: number;
  id: string;
}

/** A whole read of the index may take at most this share of the time between two of them. */
const WHOLE_READ_SHARE = 1 / 20;
/** The longest a job that appears behind the cursor waits for the next whole read. */
export const MAX_WHOLE_READ_INTERVAL_MS = 5_000;

/**
 * @internal Where a queue worker's plain claims start reading the claim index.
 *
 * Why: a claim moves its jobs out of the index of available jobs, but their entries stay until
 * vacuum. A scan skips such an entry cheaply only after marking it dead, and it may do that only
 * once no snapshot older than the claim is left. While one is (a long transaction, a report, an
 * ANALYZE), every claim from the start of the index walks every entry claimed since that snapshot,
 * visiting the table for each, and claims slow down until the queue falls behind.
 *
 * So each claim reads on after the last job this worker claimed of each kind, and the whole index is
 * read only once per 20 times as long as the last whole read took (at most 5 s): an idle worker's
 * claim reads it all, and so do claims that come rarely. A job that appears behind the cursor (a
 * higher priority, an earlier run_at, a job given back) is claimed by the next whole read, of this
 * worker or another, so it waits at most that long. The claim returns run_at as epoch ms in a float,
 * which holds the microseconds to within a quarter of one, so rounding gives them back exactly: jobs
 * of one enqueueMany() share their run_at, and only their ids tell the cursor's place among them.
 */
export class ClaimCursor {
  private readonly after = new Map<string, IndexKey>();
  private wholeReadDueAt = 0;
  private readingWhole = true;

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** $6..$8 of the next claim of `kinds`. */
  next(kinds: readonly string[]): ClaimAfter {
    this.readingWhole = this.clock() >= this.wholeReadDueAt;
    if (this.readingWhole) return fromIndexStart(kinds);
    const after: ClaimAfter = [[], [], []];
    for (const kind of kinds) {
      const key = this.after.get(kind);
      after[0].push(key ? key.priority : INDEX_START.priority);
      after[1].push(key ? key.runAtUs : INDEX_START.runAtUs);
      after[2].push(key ? key.id : INDEX_START.id);
    }
    return after;
  }

  /** The claim sent after next() returned `rows` in `ms`. */
  claimed(rows: readonly PlainClaimedRow[], ms: number): void {
    if (this.readingWhole) {
      this.after.clear();
      this.wholeReadDueAt = this.clock() + Math.min(ms / WHOLE_READ_SHARE, MAX_WHOLE_READ_INTERVAL_MS);
    }
    for (const row of rows) {
      const key = this.after.get(row.kind);
      const runAtUs = Math.round(row.run_at_ms * 1_000);
      if (!key) this.after.set(row.kind, { priority: row.priority, runAtUs, id: row.id });
      else if (before(key, row.priority, runAtUs, row.id)) {
        // Moved in place: in a drain nearly every row is past the one before, and a new key per row is garbage.
        key.priority = row.priority;
        key.runAtUs = runAtUs;
        key.id = row.id;
      }
    }
  }
}

/** Whether `key` comes before (priority, runAtUs, id) in the claim index's order. Ids are decimal strings. */
function before(key: IndexKey, priority: number, runAtUs: number, id: string): boolean {
  if (key.priority !== priority) return key.priority < priority;
  if (key.runAtUs !== runAtUs) return key.runAtUs < runAtUs;
  return key.id.length !== id.length ? key.id.length < id.length : key.id < id;
}
