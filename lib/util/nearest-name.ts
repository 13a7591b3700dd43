/** Edits (insert, delete, substitute one character) that turn `a` into `b`. */
export function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  // One row of the edit-distance table at a time: option names are short, this is boot-time only.
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitute = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, substitute);
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * The candidate closest to `name` (case-insensitive; the first one on a tie), and whether it is close
 * enough to be a likely typo: at most a third of the name's length (rounded up), and at least 2, edits away.
 */
export function nearestName(
  name: string,
  candidates: readonly string[],
): { nearest: string; close: boolean } | undefined {
  let best: { nearest: string; distance: number } | undefined;
  for (const candidate of candidates) {
    const distance = levenshtein(name.toLowerCase(), candidate.toLowerCase());
    if (!best || distance < best.distance) best = { nearest: candidate, distance };
  }
  return best && { nearest: best.nearest, close: best.distance <= Math.max(2, Math.ceil(name.length / 3)) };
}

/** The first own key of `value` that is not in `known`, with the known key nearest to it. */
export function findUnknownKey(
  value: object,
  known: readonly string[],
): { key: string; nearest: string; close: boolean } | undefined {
  const key = Object.keys(value).find((k) => !known.includes(k));
  if (key === undefined) return undefined;
  const found = nearestName(key, known);
  return found && { key, ...found };
}
