// The held-snapshot fault of the chaos run: a session that keeps one REPEATABLE READ snapshot open
// for a while, as a long report or an ANALYZE does. Until it ends, no index entry of a job claimed
// since can be marked dead, so claims that read the claim index from its start slow down; the
// workers' claims read on from their cursors (ClaimCursor) instead. Nothing may be lost meanwhile.
import pg from 'pg';

export interface SnapshotRecord {
  /** When it was taken (JS clock). */
  at: Date;
  /** Seconds into the run (from the first enqueue). */
  atSeconds?: number;
  /** How long it was held (less if PostgreSQL's restart ended the session). */
  heldMs: number;
  /** Jobs that finished while it was held. */
  finishedMeanwhile: number;
}

/** Holds a snapshot on `url` for `ms`; `finished()` counts finished jobs. A lost session ends the hold early. */
export async function holdSnapshot(
  url: string,
  ms: number,
  finished: () => Promise<number>,
  log: (line: string) => void,
): Promise<SnapshotRecord | null> {
  const client = new pg.Client({ connectionString: url, application_name: 'chaos-snapshot' });
  client.on('error', () => undefined); // a restart ends the session: the hold just ends early
  try {
    await client.connect();
    const before = await finished();
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await client.query('SELECT count(*) FROM awa.jobs'); // the snapshot is taken here
    const at = new Date();
    log(`chaos: a snapshot is held for ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, ms));
    await client.query('COMMIT').catch(() => undefined);
    const heldMs = Date.now() - at.getTime();
    return { at, heldMs, finishedMeanwhile: (await finished()) - before };
  } catch (error) {
    log(`chaos: the snapshot hold ended early: ${String(error)}`);
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}
