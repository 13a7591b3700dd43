import { performance } from 'node:perf_hooks';

const started = performance.now();

/** Progress goes to stderr, so stdout holds only the report. */
export function progress(line: string): void {
  const s = ((performance.now() - started) / 1000).toFixed(1).padStart(6);
  process.stderr.write(`[bench ${s}s] ${line}\n`);
}

export const now = () => performance.now();
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `everyMs` until it is truthy; throws after `timeoutMs`. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs: number, what: string): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (performance.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}
