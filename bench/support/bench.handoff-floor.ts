import pg from 'pg';
import type { PickupFloorLoop } from './bench.pickup-floor.js';
import { now, sleep } from './bench.progress.js';

const PREFIX = 'bench_handoff';
const OWNER = 'w1';
const SAMPLE_TIMEOUT_MS = 5_000;

/** Per sample, in ms from the enqueue's start: the handed-off job reached its worker. */
export interface HandoffFloorSamples {
  started: number[];
  /** Samples whose job went in `available` (no offer was there): none, when the design holds. */
  notHandedOff: number;
  timeouts: number;
}

/**
 * The SQL floor of a pickup by handoff, the design that skips the worker's claim: an idle worker
 * leaves an offer row; the enqueue, in its one statement and durable commit, takes an offer (SKIP
 * LOCKED), inserts the job already `running` with its run lease and a lease row for the offer's
 * owner, and NOTIFYs that owner with the job in the payload. The worker may start the job when the
 * notification comes: the job is committed as its own, fenced by its run lease, before the
 * notification is sent. The worker then offers again (outside the sample). Compare with the pickup
 * floor (measurePickupFloor): the claim's round trip is what this saves.
 */
export async function measureHandoffFloor(url: string, loop: PickupFloorLoop): Promise<HandoffFloorSamples> {
  const producer = new pg.Client({ connectionString: url });
  const worker = new pg.Client({ connectionString: url });
  await producer.connect();
  await worker.connect();
  try {
    await producer.query(`
      CREATE TABLE ${PREFIX}_jobs (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, args jsonb NOT NULL,
        state text NOT NULL, run_lease bigint NOT NULL DEFAULT 0);
      CREATE TABLE ${PREFIX}_leases (job_id bigint PRIMARY KEY, run_lease bigint NOT NULL, owner text NOT NULL,
        heartbeat_at timestamptz NOT NULL, deadline_at timestamptz NOT NULL);
      CREATE TABLE ${PREFIX}_offers (owner text PRIMARY KEY, offered_at timestamptz NOT NULL DEFAULT now())`);
    await worker.query('SET synchronous_commit = off');
    await worker.query(`LISTEN ${PREFIX}_${OWNER}`);
    const offer = { name: 'handoff_offer', text: `INSERT INTO ${PREFIX}_offers (owner) VALUES ($1)`, values: [OWNER] };
    await worker.query(offer);
    const enqueue = {
      name: 'handoff_enqueue',
      text: `
        WITH offer AS (
          DELETE FROM ${PREFIX}_offers o
           WHERE o.owner = (SELECT owner FROM ${PREFIX}_offers LIMIT 1 FOR UPDATE SKIP LOCKED)
          RETURNING o.owner
        ), job AS (
          INSERT INTO ${PREFIX}_jobs (args, state, run_lease)
          SELECT $1::jsonb, CASE WHEN o.owner IS NULL THEN 'available' ELSE 'running' END,
                 CASE WHEN o.owner IS NULL THEN 0 ELSE 1 END
            FROM (SELECT) AS one LEFT JOIN offer o ON true
          RETURNING id, state, run_lease
        ), lease AS (
          INSERT INTO ${PREFIX}_leases (job_id, run_lease, owner, heartbeat_at, deadline_at)
          SELECT j.id, j.run_lease, o.owner, now(), now() + interval '5 minutes' FROM job j CROSS JOIN offer o
        )
        SELECT j.state, pg_notify('${PREFIX}_' || coalesce(o.owner, 'none'), j.id || ':' || j.run_lease || ':' || $1)
          FROM job j LEFT JOIN offer o ON true`,
    };

    let onNotice: ((payload: string) => void) | undefined;
    worker.on('notification', (n) => onNotice?.(n.payload ?? ''));
    const out: HandoffFloorSamples = { started: [], notHandedOff: 0, timeouts: 0 };
    for (let i = 0; i < loop.warmup + loop.samples; i++) {
      await sleep(Math.random() * loop.jitterMs);
      let timer: NodeJS.Timeout | undefined;
      const started = new Promise<number | null>((resolve) => {
        timer = setTimeout(() => resolve(null), SAMPLE_TIMEOUT_MS);
        onNotice = (payload) => {
          const at = now();
          // What a worker does with the payload before it starts the job: read id, lease and args.
          const [id, lease] = payload.split(':', 2);
          JSON.parse(payload.slice(`${id}:${lease}:`.length));
          clearTimeout(timer);
          // Offer again before the next sample (not timed): an idle worker stays offered.
          worker.query(offer).then(
            () => resolve(at),
            () => resolve(null),
          );
        };
      });
      const t0 = now();
      const result = await producer.query<{ state: string }>({ ...enqueue, values: [JSON.stringify({ i })] });
      if (result.rows[0]?.state !== 'running') {
        clearTimeout(timer);
        out.notHandedOff++;
        continue;
      }
      const at = await started;
      if (at === null) {
        out.timeouts++;
        continue;
      }
      if (i >= loop.warmup) out.started.push(at - t0);
    }
    return out;
  } finally {
    await producer.end();
    await worker.end();
  }
}
