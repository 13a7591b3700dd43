import { readFileSync } from 'node:fs';

/** One measured figure; printed as one JSON line in the peers bench's shape. */
export interface Figure {
  metric: string;
  value: number;
  n: number;
  /** Unit for the human table. */
  unit: string;
  /** Scenario id, for the human table. */
  scenario: string;
  config: Record<string, unknown>;
}

export const SYSTEM = 'nestjs-awa';

export function packageVersion(): string {
  const file = new URL('../../../package.json', import.meta.url); // build/bench/support -> repo root
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

export const r2 = (x: number) => Math.round(x * 100) / 100;

/** Nearest-rank percentile of a sorted array (the peers bench's definition). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function fmt(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return Math.abs(value) >= 100 ? Math.round(value).toLocaleString('en-US') : String(r2(value));
}

/** The label tells rows apart in the human table (all of the config is in the JSON). */
function shortConfig(config: Record<string, unknown>): string {
  const extra =
    config.heartbeatBatchSize !== undefined ? `, heartbeatBatchSize=${String(config.heartbeatBatchSize)}` : '';
  return `${String(config.label ?? '')}${extra}${config.ok === false ? ' (INCOMPLETE)' : ''}`;
}

export function humanTable(figures: Figure[], failures: Array<{ scenario: string; error: string }>): string {
  const head = ['scenario', 'metric', 'value', 'unit', 'n', 'config'];
  const rows = figures.map((f) => [f.scenario, f.metric, fmt(f.value), f.unit, String(f.n), shortConfig(f.config)]);
  for (const fail of failures)
    rows.push([fail.scenario, 'FAILED', '', '', '', fail.error.split('\n')[0]!.slice(0, 120)]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}

export function jsonLine(version: string, figure: Figure, ts: Date): string {
  return JSON.stringify({
    system: SYSTEM,
    version,
    metric: figure.metric,
    value: figure.value,
    n: figure.n,
    config: figure.config,
    ts: ts.toISOString(),
  });
}
