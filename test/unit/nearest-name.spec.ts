import { findUnknownKey, levenshtein, nearestName } from '../../lib/util/nearest-name.js';
import { QUEUE_OPTION_KEYS } from './queue-option-keys.js';

describe('levenshtein', () => {
  it.each([
    ['', '', 0],
    ['', 'abc', 3],
    ['abc', '', 3],
    ['same', 'same', 0],
    ['kitten', 'sitting', 3],
    ['deadlineDurtion', 'deadlineDuration', 1],
    ['keyConcurrency', 'concurrency', 4], // case counts here; nearestName ignores it
    ['prefetch', 'perfetch', 2],
  ])('counts the edits from %j to %j: %i', (a, b, distance) => {
    expect(levenshtein(a, b)).toBe(distance);
    expect(levenshtein(b, a)).toBe(distance);
  });
});

describe('nearestName', () => {
  // The first seven: rateLimit and keyConcurrency stand below for names not among the candidates.
  const queueKeys = QUEUE_OPTION_KEYS.slice(0, 7);

  it('names the closest candidate of a typo and calls it close', () => {
    expect(nearestName('deadlineDurtion', queueKeys)).toEqual({ nearest: 'deadlineDuration', close: true });
    expect(nearestName('keyConcurrency', queueKeys)).toEqual({ nearest: 'concurrency', close: true });
  });

  it('ignores case', () => {
    expect(nearestName('MaxAttempts', queueKeys)).toEqual({ nearest: 'maxAttempts', close: true });
  });

  it('still names the nearest candidate of an unrelated name, but not as close', () => {
    const found = nearestName('rateLimit', queueKeys);
    expect(found?.close).toBe(false);
    expect(queueKeys).toContain(found?.nearest);
  });

  it('takes the first candidate on a tie, and finds nothing among no candidates', () => {
    expect(nearestName('ab', ['aa', 'bb'])).toEqual({ nearest: 'aa', close: true });
    expect(nearestName('x', [])).toBeUndefined();
  });
});

describe('findUnknownKey', () => {
  it('returns the first own key not known, with its nearest known key', () => {
    expect(
      findUnknownKey({ concurrency: 1, deadlineDurtion: 5, prefetchh: 2 }, [
        'concurrency',
        'deadlineDuration',
        'prefetch',
      ]),
    ).toEqual({ key: 'deadlineDurtion', nearest: 'deadlineDuration', close: true });
  });

  it('counts a key whose value is undefined: a typo is a typo', () => {
    expect(findUnknownKey({ deadlineDurtion: undefined }, ['deadlineDuration'])?.key).toBe('deadlineDurtion');
  });

  it('finds nothing in an object of known keys only, or an empty one', () => {
    expect(findUnknownKey({ concurrency: 1 }, ['concurrency', 'prefetch'])).toBeUndefined();
    expect(findUnknownKey({}, ['concurrency'])).toBeUndefined();
  });
});
