import { JobValueMessages } from '../awa.messages.js';
import { unstorableInJson } from './unicode-text.js';

/** A value as JSON text PostgreSQL's jsonb accepts, with its size; or why it cannot be. */
export type EncodedJson = { json: string; bytes: number } | { problem: string };

/**
 * Encodes `value` for a jsonb column: refuses what JSON.stringify cannot encode (a BigInt, a
 * circular structure), what it drops (a function, a symbol) and what jsonb rejects (NUL, a lone
 * surrogate). The size is left to the caller, whose limit and message differ.
 */
export function encodeJson(value: unknown): EncodedJson {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    return { problem: error instanceof Error ? error.message : String(error) };
  }
  if (json === undefined) return { problem: JobValueMessages.notJson(typeof value) };
  const unstorable = unstorableInJson(json);
  if (unstorable) return { problem: unstorable === 'nul' ? JobValueMessages.nul : JobValueMessages.loneSurrogate };
  return { json, bytes: Buffer.byteLength(json) };
}
