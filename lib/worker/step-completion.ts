import { randomUUID } from 'node:crypto';
import type { AwaDatabase } from '../database/awa-database.js';
import { AwaDatabase as Db } from '../database/awa-database.js';
import { EnqueueValidationError } from '../errors/enqueue-validation.error.js';
import type { GraphJob, GraphOptions } from '../interfaces/job.interface.js';
import type { ResolvedAwaOptions } from '../options/awa-options.resolved.js';
import { encodeJob } from '../producer/enqueue-validator.js';
import { checkGraph, graphPayload } from '../producer/workflow-graph.js';
import { workerSql } from '../sql/index.js';
import type { SqlStatement, SqlValues } from '../sql/sql-statement.js';
import { insertGraph, lockAttempt, waitForSteps } from '../sql/workflow.sql.js';

/** Steps a handler added (job.addSteps), checked and encoded when it added them. */
export interface EncodedSteps {
  refs: string[];
  jobsJson: string;
  edgesJson: string;
  /** Positions of the steps no other step waits for: the dependents of the adding job wait for these. */
  sinks: number[];
}

/** job.addSteps: checks the steps as enqueueGraph does (before the database) and encodes them. */
export function encodeSteps(
  jobs: ReadonlyArray<GraphJob>,
  options: Pick<GraphOptions, 'onDependencyFailure'>,
  awa: ResolvedAwaOptions,
  defaultQueue: (kind: string) => string,
): EncodedSteps {
  if (options !== undefined && (options === null || typeof options !== 'object' || 'manager' in options))
    throw new EnqueueValidationError('options', 'nestjs-awa: job.addSteps options are { onDependencyFailure? }.');
  const graph = checkGraph(jobs, options ?? {});
  const encoded = graph.items.map((item, i) => encodeJob(item, awa, defaultQueue, i));
  const waitedFor = new Set(graph.edges.map((e) => e.dependency));
  return {
    refs: graph.refs,
    jobsJson: graphPayload(encoded, graph.waitingOn),
    edgesJson: JSON.stringify(graph.edges),
    sinks: graph.refs.map((_, i) => i).filter((i) => !waitedFor.has(i)),
  };
}

/** Runs one statement in the transaction at hand (a pg client's, or a TypeORM manager's). */
export type RunStatement = <P extends unknown[], R>(statement: SqlStatement<P, R>, values: P) => Promise<R[]>;

/**
 * Writes the steps of attempt (`id`, `runLease`) in the transaction of `run`, before its completion:
 * locks the attempt with its lease, inserts the steps in its workflow (a new one if it has none) and
 * makes its waiting dependents wait for them too. 'lost': the attempt no longer holds its lease
 * (nothing written); 'cancelled': it has a cancel request (steps dropped); 'written'.
 */
export async function writeSteps(
  run: RunStatement,
  attempt: { id: string; runLease: string },
  steps: EncodedSteps,
): Promise<'written' | 'lost' | 'cancelled'> {
  const [held] = await run(lockAttempt, [attempt.id, attempt.runLease]);
  if (!held) return 'lost';
  if (held.cancel_requested) return 'cancelled';
  const workflowId = held.workflow_id ?? randomUUID();
  const rows = await run(insertGraph, [steps.jobsJson, workflowId, steps.edgesJson]);
  await run(waitForSteps, [
    attempt.id,
    steps.sinks.map((i) => rows[i]!.id),
    steps.sinks.map((i) => steps.refs[i]!),
    workflowId,
  ]);
  return 'written';
}

/** Thrown inside the transaction to roll it back when the attempt no longer holds its lease. */
class LeaseLost extends Error {}

/**
 * Completes attempt (`id`, `runLease`) with its steps, in one transaction: the attempt is locked
 * with its lease (fenced: a rescue, a cancel or a deadline cannot interleave), the steps are inserted
 * in its workflow (a new one if it has none), its waiting dependents are made to wait for the steps
 * too, and then it is completed by the batch's statement (which resolves its own edges). Resolves
 * true if completed; false, with nothing written, if the lease was lost. With a cancel request the
 * steps are dropped and the attempt ends cancelled, as any completion would.
 */
export async function completeWithSteps(
  db: AwaDatabase,
  attempt: { id: string; runLease: string; outputJson: string | undefined; outputNote: string | undefined },
  steps: EncodedSteps,
): Promise<boolean> {
  try {
    return await db.transaction(async (client) => {
      const run: RunStatement = (statement, values) =>
        Db.queryOn(client, statement, ...([values] as SqlValues<typeof values>));
      if ((await writeSteps(run, attempt, steps)) === 'lost') return false;
      const done = await Db.queryOn(client, workerSql.completeJobsWithOutput, [
        [attempt.id],
        [attempt.runLease],
        [attempt.outputJson ?? null],
        [attempt.outputNote ?? null],
      ]);
      if (done.length === 0) throw new LeaseLost();
      return true;
    });
  } catch (error) {
    if (error instanceof LeaseLost) return false;
    throw error;
  }
}
