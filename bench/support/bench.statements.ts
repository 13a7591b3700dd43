import pg from 'pg';
import { now } from './bench.progress.js';

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
  private restore: (() => void) | undefined;

  attach(): this {
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const calls = this.calls;
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
            entry.rows += r?.rowCount ?? 0;
            entry.ms += now() - t0;
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
