import type { Attributes, Counter } from '@opentelemetry/api';
import type { AwaDatabase } from '../database/awa-database.js';
import { endedWorkflows, workflowCountCutoff } from './telemetry.sql.js';

/**
 * @internal The count of ended workflows (awa.workflow.ended), read by the maintenance leader as the
 * exporter collects: the workflows whose last job ended since its previous collection, by outcome.
 * Read from the database rather than counted where jobs end: a workflow's last job may end on any
 * instance, by a worker, a rescue or an admin call, and only the database sees them all. The window
 * starts at the leader's first collection (a new leader counts from its own first one) and ends at
 * the oldest open transaction's start (see workflowCountCutoff), so no ending is counted twice or,
 * once committed, missed. Returns the function to call at each collection with whether this
 * instance leads.
 */
export function workflowEndings(
  db: AwaDatabase,
  counter: Counter,
  attributes: Attributes | undefined,
): (leads: boolean) => Promise<void> {
  let since: string | null = null;
  const byOutcome = new Map<string, Attributes>();
  return async (leads) => {
    if (!leads) {
      since = null; // another instance counts meanwhile: start again from the next window we lead
      return;
    }
    const [row] = await db.query(workflowCountCutoff, [since]);
    const cutoff = row!.cutoff;
    if (since !== null && cutoff !== since) {
      for (const { outcome, count } of await db.query(endedWorkflows, [since, cutoff])) {
        let attrs = byOutcome.get(outcome);
        if (!attrs) byOutcome.set(outcome, (attrs = { ...attributes, outcome }));
        counter.add(count, attrs);
      }
    }
    since = cutoff;
  };
}
