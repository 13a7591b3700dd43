// At least once, not more than the faults explain: an event comes to the durable-event group `chaos`
// again only when its first delivery was lost with a worker (killed, frozen, stopped) or in the
// PostgreSQL restart (its acknowledgement not stored). The other event checks are in chaos-invariants.ts.
import type { Check } from './chaos-invariants.js';

const sample = (rows: unknown[]) => rows.slice(0, 5).map((r) => JSON.stringify(r));

/** The faults of the run that may make the group see an event again: whose deliveries, and when. */
export interface EventFaults {
  /** Processes killed, frozen or stopped: an event they were handed may come again. */
  pids: number[];
  /** The PostgreSQL restart (database clock, ms): an acknowledgement may be lost in it. */
  restart: { from: number; to: number } | null;
}

export function redeliveryCheck(faults: () => EventFaults): Check {
  return {
    name: 'an event came to the durable-event group twice only after a fault',
    async run(query) {
      const { pids, restart } = faults();
      const rows = await query(
        `SELECT event_id::text, array_agg(pid ORDER BY at) AS pids,
                (extract(epoch FROM min(at)) * 1000)::float8 AS first_at
           FROM chaos.event_deliveries GROUP BY event_id HAVING count(*) > 1`,
      );
      // Any faulted receiver explains it, not only the first by time: a frozen worker's record of its
      // delivery is itself written late, after the thaw, behind the delivery of the worker that took over.
      const unexplained = rows.filter(
        (r: { pids: number[]; first_at: number }) =>
          !r.pids.some((pid) => pids.includes(pid)) &&
          !(restart && r.first_at >= restart.from && r.first_at <= restart.to),
      );
      return unexplained.length === 0
        ? []
        : [`${unexplained.length} event(s) handed twice without a fault, e.g. ${sample(unexplained).join('; ')}`];
    },
  };
}
