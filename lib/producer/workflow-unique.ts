import { EnqueueValidationError } from '../errors/enqueue-validation.error.js';
import { UniqueConflictError } from '../errors/unique-conflict.error.js';
import type { EncodedJob } from './enqueue-validator.js';
import { WorkflowMessages } from './workflow.messages.js';
import { SqlState } from '../database/sql-state.js';

const UNIQUE_INDEX = 'jobs_unique_idx';

/**
 * The refs of a graph's unique jobs by their key (before the period's bucket). Two jobs of one graph
 * with one key would block each other: refused before the database, naming both.
 */
export function uniqueKeysOf(refs: readonly string[], encoded: readonly EncodedJob[]): Map<string, string> {
  const keys = new Map<string, string>();
  encoded.forEach((job, i) => {
    if (!job.unique) return;
    const first = keys.get(job.unique.key);
    if (first !== undefined)
      throw new EnqueueValidationError('unique', WorkflowMessages.uniqueDuplicateInGraph(refs[i]!, first), i);
    keys.set(job.unique.key, refs[i]!);
  });
  return keys;
}

/**
 * insertGraph's error as the caller should see it: a violation of jobs_unique_idx (a job holds the key
 * of one of the graph's unique jobs; the statement inserted nothing) becomes a UniqueConflictError
 * naming that job's ref, found by the key in the error's detail; any other error is returned as is.
 */
export function graphUniqueConflict(error: unknown, keys: ReadonlyMap<string, string>): unknown {
  const pg = (error as { driverError?: unknown } | null)?.driverError ?? error;
  const { code, constraint, detail } = (pg ?? {}) as { code?: unknown; constraint?: unknown; detail?: unknown };
  if (code !== SqlState.uniqueViolation || constraint !== UNIQUE_INDEX) return error;
  const held =
    typeof detail === 'string' ? /^Key \(unique_key\)=\((.*)\) already exists\.$/s.exec(detail)?.[1] : undefined;
  // The stored key is the encoded one, or with a period that plus `:<bucket>`.
  const base = held === undefined ? undefined : keys.has(held) ? held : held.replace(/:\d+$/, '');
  return new UniqueConflictError(1, { ref: base === undefined ? undefined : keys.get(base), cause: error });
}
