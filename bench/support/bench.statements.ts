import type { INestApplicationContext } from '@nestjs/common';
import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { now } from './bench.progress.js';

/**
 * Counts the statements an in-process app sends through its pool, by prepared-statement name
 * (unnamed ones under '(unnamed)'), with the rows each returned and the time each took from the
 * call to its result (queueing for a pool connection included). It wraps `pool.query` of the
 * app's DataSource: the bench's instrument, not part of the library. The instance session's own
 * connection (LISTEN, leader lock) is not counted.
 */
export class StatementCounter {
  readonly calls = new Map<string, { calls: number; rows: number; ms: number }>();
  private restore: (() => void) | undefined;

  attach(app: INestApplicationContext): this {
    const pool = (app.get(DataSource).driver as unknown as { master: Pool }).master;
    const original = pool.query;
    const calls = this.calls;
    const counted = function (this: Pool, ...args: unknown[]) {
      const first = args[0] as { name?: string } | string;
      const name = (typeof first === 'object' && first?.name) || '(unnamed)';
      const entry = calls.get(name) ?? { calls: 0, rows: 0, ms: 0 };
      entry.calls++;
      calls.set(name, entry);
      const t0 = now();
      const result = (original as (...a: unknown[]) => unknown).apply(this, args);
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
    pool.query = counted as typeof pool.query;
    this.restore = () => (pool.query = original);
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
