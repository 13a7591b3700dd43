// The durable-event invariants (docs/durable-events.md): every transition of the run wrote its event,
// the audit group was handed every one, and only a fault brought one to it twice.
import { AUDIT_EVENTS } from './chaos-config.js';
import type { Check } from './chaos-invariants.js';

const sample = (rows: unknown[]) => rows.slice(0, 5).map((r) => JSON.stringify(r));

/** The faults of the run that may make a group see an event again: whose deliveries, and when. */
export interface EventFaults {
  /** Processes killed, frozen or stopped: an event they were handed may come again. */
  pids: number[];
  /** The PostgreSQL restart (database clock, ms): an acknowledgement may be lost in it. */
  restart: { from: number; to: number } | null;
}

/** Events still to reach the audit group (the run waits for none before it checks). */
export const UNSEEN_EVENTS_SQL = `SELECT count(*)::int AS n FROM awa.job_events e
  WHERE e.event = ANY ($1::text[]) AND NOT EXISTS (SELECT 1 FROM chaos.events_seen s WHERE s.event_id = e.id)`;
export const UNSEEN_EVENTS_VALUES = [[...AUDIT_EVENTS]];

export function eventChecks(faults: () => EventFaults): Check[] {
  return [
    // chaos.transitions is the triggers' record of every state change (moves into history included).
    {
      name: 'every transition to completed, failed, cancelled or retryable wrote its durable event, once',
      async run(query) {
        const rows = await query(
          `WITH t AS (
             SELECT job_id, new_state AS state, count(*)::int AS n FROM chaos.transitions
              WHERE new_state IN ('completed', 'failed', 'cancelled', 'retryable') GROUP BY 1, 2
           ), e AS (
             SELECT job_id, CASE event WHEN 'retrying' THEN 'retryable' ELSE event END AS state, count(*)::int AS n
               FROM awa.job_events WHERE event = ANY ($1::text[]) GROUP BY 1, 2
           )
           SELECT job_id::text, state, coalesce(t.n, 0) AS transitions, coalesce(e.n, 0) AS events
             FROM t FULL JOIN e USING (job_id, state) WHERE coalesce(t.n, 0) <> coalesce(e.n, 0)`,
          [[...AUDIT_EVENTS]],
        );
        const [{ n }] = await query('SELECT count(*)::int AS n FROM awa.job_events');
        if (rows.length > 0) return [`${rows.length} (job, state) pair(s), e.g. ${sample(rows).join('; ')}`];
        return n > 0 ? [] : ['no durable event was written'];
      },
    },
    {
      name: 'the audit group was handed every durable event',
      async run(query) {
        const [{ n }] = await query(UNSEEN_EVENTS_SQL, UNSEEN_EVENTS_VALUES);
        return n === 0 ? [] : [`${n} event(s) never handed to the group`];
      },
    },
    // At least once: a delivery whose acknowledgement was lost comes again. Only a fault loses one: the
    // first delivery was to a process killed, frozen or stopped, or in the PostgreSQL restart.
    {
      name: 'an event came to the audit group twice only after a fault',
      async run(query) {
        const { pids, restart } = faults();
        const rows = await query(
          `SELECT event_id::text, array_agg(pid ORDER BY at) AS pids,
                  (extract(epoch FROM min(at)) * 1000)::float8 AS first_at
             FROM chaos.events_seen GROUP BY event_id HAVING count(*) > 1`,
        );
        const unexplained = rows.filter(
          (r: { pids: number[]; first_at: number }) =>
            !pids.includes(r.pids[0]!) && !(restart && r.first_at >= restart.from && r.first_at <= restart.to),
        );
        return unexplained.length === 0
          ? []
          : [`${unexplained.length} event(s) handed twice without a fault, e.g. ${sample(unexplained).join('; ')}`];
      },
    },
  ];
}
