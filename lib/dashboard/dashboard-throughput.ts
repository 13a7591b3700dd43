import type { AwaDatabase } from '../database/awa-database.js';
import * as sql from './dashboard.sql.js';

/** Minutes the overview's throughput chart covers. */
export const CHART_MINUTES = 60;
/**
 * Minutes this far behind the current one no longer change: a completion's finalized_at is its
 * transaction's start (now()), and it commits well within this of it.
 */
const SETTLE_MINUTES = 2;

/**
 * The throughput chart's rows (dashboard.sql throughput), read in full once, then only from the
 * minutes that may still change: a refresh reads the last few minutes' completions, not the hour's
 * (at a few hundred jobs/s, the hour is a million rows). Past minutes come from memory; a retry
 * that clears a settled job's finalized_at leaves its minute as it was (it did finish then).
 */
export class ThroughputReader {
  private settled: { before: number; rows: sql.ThroughputRow[] } | null = null;

  constructor(private readonly db: AwaDatabase) {}

  async read(): Promise<sql.ThroughputRow[]> {
    const since = this.settled?.before ?? null;
    const rows = await this.db.query(sql.throughput, [CHART_MINUTES, since === null ? null : new Date(since)]);
    if (rows.length === 0) return rows;
    const start = rows[0]!.minute.getTime();
    const current = rows[rows.length - 1]!.minute.getTime();
    const kept = (this.settled?.rows ?? []).filter((r) => r.minute.getTime() >= start);
    const all = since === null ? rows : [...kept, ...rows.filter((r) => r.minute.getTime() >= since)];
    const before = current - SETTLE_MINUTES * 60_000;
    this.settled = { before, rows: all.filter((r) => r.minute.getTime() < before) };
    return all;
  }
}
