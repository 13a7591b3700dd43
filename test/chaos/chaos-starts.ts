// Handler starts of the rated queue, as each worker process saw them: Date.now() at handler entry (one
// machine clock for all processes). Each process appends to a file of its own, synchronously, so a
// SIGKILL loses no line that was written; the checker reads them all after the run.
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface HandlerStart {
  at: number;
  jobId: string;
  runLease: string;
  pid: number;
  /** The rated queue's prefetch in that process. */
  prefetch: number;
}

export function recordStart(dir: string, jobId: string, runLease: string, prefetch: number): void {
  appendFileSync(
    join(dir, `starts-${process.pid}.log`),
    `${Date.now()} ${jobId} ${runLease} ${process.pid} ${prefetch}\n`,
  );
}

/** Every recorded start, oldest first. A line cut short by a SIGKILL mid-write is skipped. */
export function readStarts(dir: string): HandlerStart[] {
  const starts: HandlerStart[] = [];
  for (const file of readdirSync(dir).filter((name) => name.startsWith('starts-'))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      const [at, jobId, runLease, pid, prefetch] = line.split(' ');
      if (prefetch === undefined || !/^\d+$/.test(prefetch)) continue;
      starts.push({ at: Number(at), jobId: jobId!, runLease: runLease!, pid: Number(pid), prefetch: Number(prefetch) });
    }
  }
  return starts.sort((a, b) => a.at - b.at);
}

/**
 * The most starts in any window [x, x + period) and where it begins: such a window can always be
 * moved to begin at a start, so one pass over the sorted starts with a second pointer finds it.
 * Date.now() is whole ms; two recorded starts less than `period` apart really were (floor(b) - floor(a)
 * < period implies b - a < period), so the rounding cannot raise a false alarm.
 */
export function busiestWindow(sorted: HandlerStart[], period: number): { count: number; from: number | null } {
  let best = { count: 0, from: null as number | null };
  let end = 0;
  for (let i = 0; i < sorted.length; i++) {
    while (end < sorted.length && sorted[end]!.at < sorted[i]!.at + period) end++;
    if (end - i > best.count) best = { count: end - i, from: sorted[i]!.at };
  }
  return best;
}
