import pg from 'pg';
import { now, sleep } from './bench.progress.js';

const TABLE = 'bench_pickup_floor';
const SAMPLE_TIMEOUT_MS = 5_000;

/** The serial loop's shape, as the latency scenario's own (so the two compare sample for sample). */
export interface PickupFloorLoop {
  warmup: number;
  samples: number;
  jitterMs: number;
}

/** Per sample, in ms from the insert's start: its commit returned; the notification came; the claim returned. */
export interface PickupFloorSamples {
  inserted: number[];
  notified: number[];
  claimed: number[];
  timeouts: number;
}

/**
 * The SQL floor of a durable pickup on this server, with nothing around it: one pg connection
 * inserts a row and sends a NOTIFY in one statement (one round trip, one durable commit, as
 * `enqueue()`); a second, listening, connection claims the row by key as soon as the notification
 * arrives (one UPDATE, committed asynchronously, as our claim). Any PostgreSQL queue's pickup holds
 * both commits and the notification; what a queue adds is above this.
 */
export async function measurePickupFloor(url: string, loop: PickupFloorLoop): Promise<PickupFloorSamples> {
  const producer = new pg.Client({ connectionString: url });
  const listener = new pg.Client({ connectionString: url });
  await producer.connect();
  await listener.connect();
  try {
    await producer.query(
      `CREATE TABLE ${TABLE} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, args jsonb NOT NULL,
         state text NOT NULL DEFAULT 'available')`,
    );
    await listener.query('SET synchronous_commit = off');
    await listener.query(`LISTEN ${TABLE}`);
    let onNotice: ((id: string) => void) | undefined;
    listener.on('notification', (n) => onNotice?.(n.payload ?? ''));
    const insert = {
      name: 'floor_insert',
      text: `WITH i AS (INSERT INTO ${TABLE} (args) VALUES ($1::jsonb) RETURNING id)
             SELECT pg_notify('${TABLE}', id::text) FROM i`,
    };
    const claim = {
      name: 'floor_claim',
      text: `UPDATE ${TABLE} SET state = 'running' WHERE id = $1 AND state = 'available'`,
    };

    const out: PickupFloorSamples = { inserted: [], notified: [], claimed: [], timeouts: 0 };
    for (let i = 0; i < loop.warmup + loop.samples; i++) {
      await sleep(Math.random() * loop.jitterMs);
      const claimed = new Promise<{ notified: number; claimed: number } | null>((resolve) => {
        const timer = setTimeout(() => resolve(null), SAMPLE_TIMEOUT_MS);
        onNotice = (id) => {
          const notified = now();
          // A claim that failed counts as a timeout (null), never as an unhandled rejection.
          listener
            .query({ ...claim, values: [id] })
            .then(
              () => resolve({ notified, claimed: now() }),
              () => resolve(null),
            )
            .finally(() => clearTimeout(timer));
        };
      });
      const t0 = now();
      await producer.query({ ...insert, values: [JSON.stringify({ i })] });
      const inserted = now() - t0;
      const sample = await claimed;
      if (!sample) {
        out.timeouts++;
        continue;
      }
      if (i < loop.warmup) continue;
      out.inserted.push(inserted);
      out.notified.push(sample.notified - t0);
      out.claimed.push(sample.claimed - t0);
    }
    return out;
  } finally {
    await producer.end();
    await listener.end();
  }
}
