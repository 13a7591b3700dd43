import { performance } from 'node:perf_hooks';

const started = performance.now();

/** Progress goes to stderr, so stdout holds only the report. */
export function progress(line: string): void {
  const s = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${s}s] ${line}\n`);
}

export const now = () => performance.now();
export { setTimeout as sleep } from 'node:timers/promises';
export { waitFor } from '../../test/support/wait-for.js';
