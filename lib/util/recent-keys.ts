/**
 * The last `capacity` keys added, for "seen already?" checks that must stay bounded: the oldest
 * key is forgotten when a new one would go over.
 */
export class RecentKeys {
  private readonly keys = new Set<string>();

  constructor(private readonly capacity: number) {}

  /** Adds `key`; false when it was there already. */
  add(key: string): boolean {
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    // A Set iterates in insertion order: its first key is the oldest.
    if (this.keys.size > this.capacity) this.keys.delete(this.keys.values().next().value!);
    return true;
  }
}
