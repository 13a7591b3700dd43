/**
 * Text PostgreSQL cannot store: the NUL character (text and jsonb reject it) and a lone UTF-16
 * surrogate, half of a pair, as left by a string cut in the middle of an emoji (jsonb rejects its
 * \u escape; a text parameter would silently turn it into U+FFFD).
 */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/**
 * In JSON.stringify's output, NUL and lone surrogates are exactly the escapes \u0000 and
 * \ud800-\udfff (paired surrogates are written as they are); an escape counts only after an even
 * run of backslashes, since `\\u0000` is a literal backslash followed by "u0000".
 */
const UNSTORABLE_JSON_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\u(0000|d[89a-f][0-9a-f]{2})/;

export function isStorableText(text: string): boolean {
  return !UNSTORABLE.test(text);
}

/** What in a JSON text (from JSON.stringify) PostgreSQL would refuse, or undefined if nothing. */
export function unstorableInJson(json: string): 'nul' | 'surrogate' | undefined {
  if (!json.includes('\\u')) return undefined;
  const found = UNSTORABLE_JSON_ESCAPE.exec(json);
  if (!found) return undefined;
  return found[1] === '0000' ? 'nul' : 'surrogate';
}

/** `text` made storable: NUL becomes the two characters `\0`, a lone surrogate U+FFFD. */
export function toStorableText(text: string): string {
  return isStorableText(text) ? text : text.replace(UNSTORABLE_ALL, (c) => (c === '\u0000' ? '\\0' : '\ufffd'));
}
