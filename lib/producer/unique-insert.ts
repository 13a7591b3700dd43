import { UniqueConflictError } from '../errors/unique-conflict.error.js';
import { jobsSql } from '../sql/index.js';
import type { SqlStatement } from '../sql/sql-statement.js';
import { jobObject, type EncodedJob } from './enqueue-validator.js';

/** Rounds of insert-then-resolve before a unique job that keeps losing its blocker gives up. */
export const UNIQUE_MAX_ROUNDS = 10;

/** Runs a statement on the producer's connection: the pool, or the caller's transaction. */
export type RunStatement = <P extends unknown[], R>(sql: SqlStatement<P, R>, values: P) => Promise<R[]>;

/** What became of one job of a batch with unique jobs; kind and queue are the holder's for a duplicate. */
export interface UniqueOutcome {
  id: string;
  duplicate: boolean;
  replaced: boolean;
  kind?: string;
  queue?: string;
}

/**
 * Inserts a batch in which some jobs are unique: insertUniqueJobs inserts every job no other job
 * blocks (the unique index decides, race-free); resolveUniqueJobs then finds the job holding the key
 * of each one that was not inserted (replacing its args and runAt in debounce mode). A holder that left
 * its blocking states between the two statements leaves nothing to find: that job is inserted again,
 * for at most UNIQUE_MAX_ROUNDS rounds. Outcomes come back in input order.
 */
export async function insertWithUnique(
  run: RunStatement,
  jobs: readonly EncodedJob[],
  traceparent?: string,
): Promise<UniqueOutcome[]> {
  const outcomes = new Array<UniqueOutcome>(jobs.length);
  let pending = jobs.map((_, i) => i);
  for (let round = 1; pending.length > 0; round++) {
    if (round > UNIQUE_MAX_ROUNDS) throw new UniqueConflictError(UNIQUE_MAX_ROUNDS);
    const rows = await run(jobsSql.insertUniqueJobs, [
      `[${pending.map((i) => jobObject(jobs[i]!, traceparent, `"ord":${i}`)).join(',')}]`,
    ]);
    const duplicates: string[] = [];
    for (const row of rows) {
      if (row.id !== null) outcomes[row.ord] = { id: row.id, duplicate: false, replaced: false };
      else duplicates.push(resolveElement(row.ord, row.unique_key!, jobs[row.ord]!));
    }
    if (duplicates.length === 0) break;
    pending = [];
    for (const holder of await run(jobsSql.resolveUniqueJobs, [`[${duplicates.join(',')}]`])) {
      if (holder.id === null) pending.push(holder.ord);
      else {
        outcomes[holder.ord] = {
          id: holder.id,
          duplicate: true,
          replaced: holder.replaced,
          kind: holder.kind!,
          queue: holder.queue!,
        };
      }
    }
  }
  return outcomes;
}

/** The element of resolveUniqueJobs' JSON array for job `ord` (args and run_at only to replace). */
function resolveElement(ord: number, key: string, job: EncodedJob): string {
  const replace = job.unique?.replace === true;
  return (
    `{"ord":${ord},"unique_key":${JSON.stringify(key)},"replace":${replace},` +
    `"args":${replace ? job.unique!.args : 'null'},"run_at":${replace ? job.unique!.runAt : 'null'}}`
  );
}
