import { clip, describeThrown } from '../../lib/util/describe-error.js';

describe('describeThrown', () => {
  it('names an Error and follows its cause chain', () => {
    const error = new Error('outer', { cause: new TypeError('inner', { cause: 'root' }) });
    expect(describeThrown(error)).toBe('Error: outer (cause: TypeError: inner (cause: root))');
  });

  it('describes whatever else a handler may throw', () => {
    expect(describeThrown(undefined)).toBe('a handler threw undefined');
    expect(describeThrown('plain text')).toBe('plain text');
    expect(describeThrown(null)).toBe('thrown value: null');
    expect(describeThrown({ code: 42 })).toBe('thrown value: {"code":42}');
    expect(describeThrown(Symbol('s'))).toBe('thrown value: Symbol(s)'); // JSON.stringify gives undefined
  });

  it('falls back to String() for values JSON cannot carry', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(describeThrown(cyclic)).toBe('thrown value: [object Object]');
    expect(describeThrown(10n)).toBe('thrown value: 10');
  });
});

describe('clip', () => {
  it('keeps a text up to the limit as it is', () => {
    expect(clip('x'.repeat(8_000))).toBe('x'.repeat(8_000));
    expect(clip('abc', 3)).toBe('abc');
  });

  it('cuts a longer text at the limit and says how much was cut', () => {
    expect(clip('abcdef', 4)).toBe('abcd… (2 more characters)');
    expect(clip('y'.repeat(8_010))).toBe(`${'y'.repeat(8_000)}… (10 more characters)`);
  });

  it('makes the text storable: NUL as \\0, a lone surrogate (also one left by the cut) as U+FFFD', () => {
    expect(clip('a\u0000b')).toBe('a\\0b');
    expect(clip('a\uD800b')).toBe('a\uFFFDb');
    expect(clip('ab\uD83D\uDE00', 3)).toBe('ab\uFFFD… (1 more characters)');
    expect(clip('ok \uD83D\uDE00')).toBe('ok \uD83D\uDE00');
  });
});
