import { RecentKeys } from '../../lib/util/recent-keys.js';

describe('RecentKeys', () => {
  it('says whether a key is new, and forgets the oldest beyond its capacity', () => {
    const keys = new RecentKeys(2);
    expect(keys.add('a')).toBe(true);
    expect(keys.add('a')).toBe(false);
    expect(keys.add('b')).toBe(true);
    expect(keys.add('c')).toBe(true); // 'a' forgotten
    expect(keys.add('b')).toBe(false);
    expect(keys.add('a')).toBe(true);
  });
});
