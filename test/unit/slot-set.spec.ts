import { SlotSet } from '../../lib/util/slot-set.js';

class Member {
  leaseSlot = -1;
  runningSlot = -1;
  constructor(readonly name: string) {}
}

const names = (set: SlotSet<Member>) =>
  set
    .toArray()
    .map((m) => m.name)
    .sort();

describe('SlotSet', () => {
  it('adds each member once, removes it, and says who is a member', () => {
    const set = new SlotSet<Member>('leaseSlot');
    const [a, b, c] = [new Member('a'), new Member('b'), new Member('c')];
    set.add(a);
    set.add(b);
    set.add(a);
    expect(set.size).toBe(2);
    expect(set.has(a)).toBe(true);
    expect(set.has(c)).toBe(false);
    expect(set.delete(c)).toBe(false);
    expect(set.delete(a)).toBe(true);
    expect(set.delete(a)).toBe(false);
    expect(set.has(a)).toBe(false);
    expect(a.leaseSlot).toBe(-1);
    expect(names(set)).toEqual(['b']);
  });

  it('moves the last member into the gap a removed one leaves, and keeps its slot right', () => {
    const set = new SlotSet<Member>('leaseSlot');
    const members = ['a', 'b', 'c', 'd'].map((n) => new Member(n));
    members.forEach((m) => set.add(m));
    set.delete(members[1]!);
    expect(members[3]!.leaseSlot).toBe(1);
    expect(set.toArray()[1]).toBe(members[3]);
    set.delete(members[3]!); // the moved member leaves from its new place
    expect(names(set)).toEqual(['a', 'c']);
    expect(set.has(members[2]!)).toBe(true);
    set.add(members[1]!);
    expect(names(set)).toEqual(['a', 'b', 'c']);
  });

  it('holds a member in two sets through two slots, and a copy of its members', () => {
    const leases = new SlotSet<Member>('leaseSlot');
    const running = new SlotSet<Member>('runningSlot');
    const [a, b] = [new Member('a'), new Member('b')];
    leases.add(a);
    leases.add(b);
    running.add(b);
    expect(running.has(a)).toBe(false);
    expect([b.leaseSlot, b.runningSlot]).toEqual([1, 0]);
    const copy = leases.toArray();
    leases.delete(a);
    expect(copy.map((m) => m.name)).toEqual(['a', 'b']);
    expect(running.has(b)).toBe(true);
    expect(names(leases)).toEqual(['b']);
  });

  it('stays consistent over many adds and removes in any order', () => {
    const set = new SlotSet<Member>('leaseSlot');
    const pool = Array.from({ length: 50 }, (_, i) => new Member(String(i)));
    const model = new Set<Member>();
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648);
    for (let step = 0; step < 2_000; step++) {
      const member = pool[next() % pool.length]!;
      if (next() % 2 === 0) {
        set.add(member);
        model.add(member);
      } else expect(set.delete(member)).toBe(model.delete(member));
    }
    expect(set.size).toBe(model.size);
    expect(names(set)).toEqual([...model].map((m) => m.name).sort());
    for (const member of pool) expect(set.has(member)).toBe(model.has(member));
  });
});
