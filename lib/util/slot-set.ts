/** The name of the number field where a SlotSet keeps each member's place (-1: not a member). */
export type SlotField<T> = { [K in keyof T]: T[K] extends number ? K : never }[keyof T];

/**
 * A set of objects that hold their own place in it: an array, a member's index kept in its field
 * `slot`, removal by moving the last member into the gap. For the worker's hot path, in place of a
 * Set, for the garbage collector's sake: a long-lived Set keeps its hash table in the old generation
 * and rehashes into a new one there every few hundred adds; the table it leaves still points at the
 * members it held, and the young generation's collections take those stale pointers for live ones
 * until the next full collection. Every attempt that passed through the lease registry was so kept
 * alive, and promoted with its row, its strings and its Job: 60% of the bytes a long drain promoted,
 * and 40% of its young collections' pauses (see docs/performance.md). Here a member that leaves has its
 * slot cleared or given to another member, so nothing points at it after.
 * Iteration order is not insertion order.
 */
export class SlotSet<T> {
  private readonly members: T[] = [];

  constructor(private readonly slot: SlotField<T>) {}

  get size(): number {
    return this.members.length;
  }

  has(member: T): boolean {
    const at = member[this.slot] as number;
    return at >= 0 && this.members[at] === member;
  }

  /** Adds `member` (nothing if it is one already). */
  add(member: T): void {
    if (this.has(member)) return;
    (member[this.slot] as number) = this.members.length;
    this.members.push(member);
  }

  /** Removes `member`; false if it was not one. */
  delete(member: T): boolean {
    if (!this.has(member)) return false;
    const at = member[this.slot] as number;
    const last = this.members.pop()!;
    if (last !== member) {
      this.members[at] = last;
      (last[this.slot] as number) = at;
    }
    (member[this.slot] as number) = -1;
    return true;
  }

  /** The members now, in a new array. */
  toArray(): T[] {
    return this.members.slice();
  }
}
