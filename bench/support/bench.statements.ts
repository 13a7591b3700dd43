import pg from 'pg';
import { claimJobs } from '../../lib/sql/claim.sql.js';
import { completeJobs, completeJobsOutsideWorkflows } from '../../lib/sql/worker.sql.js';
import { now } from './bench.progress.js';

/** How the drain's two statements overlapped: shares of its window, in percent (see StatementCounter.pipeline). */
export interface PipelineShares {
  window_ms: number;
  claim_in_flight_pct: number;
  completion_in_flight_pct: number;
  both_in_flight_pct: number;
  neither_in_flight_pct: number;
}

/** The plain claim and the plain completions (in workflows or not), whose overlap pipeline() measures. */
const PIPELINE = new Set([claimJobs.name, completeJobs.name, completeJobsOutsideWorkflows.name]);

/**
 * Counts the library's statements (prepared-statement names `awa_*`) that an in-process app sends,
 * on every connection (pool clients and the dedicated claim and session connections), with the rows
 * each returned and the time each took from the call to its result. It wraps pg's
 * `Client.prototype.query` for as long as it is attached: the bench's instrument, not part of the
 * library. (Wrapping the DataSource's `pool.query` missed every statement: the library runs its
 * statements on checked-out clients.) Statements of other apps in the process are counted too;
 * a scenario attaches it around one app's drain.
 */
export class StatementCounter {
  readonly calls = new Map<string, { calls: number; rows: number; ms: number }>();
  /** Each claim and completion: name, sent, answered (ms), rows. */
  private readonly spans: Array<[name: string, sent: number, answered: number, rows: number]> = [];
  private restore: (() => void) | undefined;

  attach(): this {
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const calls = this.calls;
    const spans = this.spans;
    proto.query = function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as { name?: string } | string;
      const name = typeof first === 'object' ? first?.name : undefined;
      if (!name?.startsWith('awa_')) return original.apply(this, args);
      const entry = calls.get(name) ?? { calls: 0, rows: 0, ms: 0 };
      entry.calls++;
      calls.set(name, entry);
      const t0 = now();
      const result = original.apply(this, args);
      if (result instanceof Promise) {
        result.then(
          (r: { rowCount?: number | null }) => {
            const answered = now();
            entry.rows += r?.rowCount ?? 0;
            entry.ms += answered - t0;
            if (PIPELINE.has(name)) spans.push([name, t0, answered, r?.rowCount ?? 0]);
          },
          () => undefined,
        );
      }
      return result;
    };
    this.restore = () => (proto.query = original);
    return this;
  }

  reset(): void {
    this.calls.clear();
    this.spans.length = 0;
  }

  /**
   * From the first claim that brought jobs to the last completion: how much of that window a claim,
   * a completion, both and neither were in flight. The floor keeps both of its connections busy all
   * the time; a drain with much time where neither is in flight waits on its own instance, one with
   * both in flight most of the time is bound elsewhere (CPU, on a machine the database shares).
   */
  pipeline(): PipelineShares | null {
    const claimsWithJobs = this.spans.filter(([n, , , rows]) => n === claimJobs.name && rows > 0);
    if (claimsWithJobs.length === 0) return null;
    const start = Math.min(...claimsWithJobs.map(([, sent]) => sent));
    const end = Math.max(...this.spans.map(([, , answered]) => answered));
    const edges: Array<[at: number, claim: number, completion: number]> = [];
    for (const [name, sent, answered] of this.spans) {
      if (answered <= start) continue;
      const claim = name === claimJobs.name ? 1 : 0;
      edges.push([Math.max(sent, start), claim, 1 - claim], [answered, -claim, claim - 1]);
    }
    edges.sort((a, b) => a[0] - b[0]);
    const shares = { claim: 0, completion: 0, both: 0, neither: 0 };
    let claims = 0;
    let completions = 0;
    let last = start;
    for (const [at, claim, completion] of edges) {
      const dt = at - last;
      if (claims > 0) shares.claim += dt;
      if (completions > 0) shares.completion += dt;
      if (claims > 0 && completions > 0) shares.both += dt;
      if (claims === 0 && completions === 0) shares.neither += dt;
      claims += claim;
      completions += completion;
      last = at;
    }
    const windowMs = end - start;
    const pct = (ms: number) => Math.round((ms / windowMs) * 1000) / 10;
    return {
      window_ms: Math.round(windowMs),
      claim_in_flight_pct: pct(shares.claim),
      completion_in_flight_pct: pct(shares.completion),
      both_in_flight_pct: pct(shares.both),
      neither_in_flight_pct: pct(shares.neither),
    };
  }

  detach(): void {
    this.restore?.();
  }

  /** Calls, mean rows and mean ms per call, per statement, for a figure's config. */
  summary(): Record<string, { calls: number; rows_per_call: number; ms_per_call: number }> {
    const out: Record<string, { calls: number; rows_per_call: number; ms_per_call: number }> = {};
    for (const [name, { calls, rows, ms }] of [...this.calls].sort((a, b) => b[1].calls - a[1].calls)) {
      out[name] = {
        calls,
        rows_per_call: Math.round((rows / calls) * 10) / 10,
        ms_per_call: Math.round((ms / calls) * 100) / 100,
      };
    }
    return out;
  }

  get total(): number {
    let total = 0;
    for (const { calls } of this.calls.values()) total += calls;
    return total;
  }
}
