/** One drain of a process scenario: its rate and everything its figure's config reports. */
export interface DrainRun {
  value: number;
  ok: boolean;
  config: Record<string, unknown>;
}

/** A cleanup that may be called twice (at the end of its repeat, and by the runner after a timeout). */
export function once(cleanup: () => unknown): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () =>
    (done ??= Promise.resolve()
      .then(cleanup)
      .then(() => undefined));
}

/**
 * The run a repeated scenario reports: the median by rate (the lower middle one for an even
 * count), with every run's rate alongside. A failed run counts only if every run failed.
 */
export function medianRun(runs: DrainRun[]): { run: DrainRun; values: number[] } {
  const ok = runs.filter((r) => r.ok);
  const pool = ok.length > 0 ? ok : runs;
  const sorted = [...pool].sort((a, b) => a.value - b.value);
  return { run: sorted[Math.floor((sorted.length - 1) / 2)]!, values: runs.map((r) => r.value) };
}
