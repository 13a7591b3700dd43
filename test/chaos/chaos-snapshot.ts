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
  /** How long it was held: until its COMMIT, or until PostgreSQL's restart ended the session. */
  heldMs: number;
  /** Whether the restart ended it. */
  endedByRestart: boolean;
  /** Jobs that finished while it was held (null: not counted, the server was down). */
  finishedMeanwhile: number | null;
}

/** Holds a snapshot on `url` for `ms`; `finished()` counts finished jobs. Null if it could not be taken. */
export async function holdSnapshot(
  url: string,
  ms: number,
  finished: () => Promise<number>,
  log: (line: string) => void,
): Promise<SnapshotRecord | null> {
  const client = new pg.Client({ connectionString: url, application_name: 'chaos-snapshot' });
  let lostAt: number | undefined;
  client.on('error', () => (lostAt ??= Date.now())); // a restart ends the session, and so the hold
  const count = () => finished().catch(() => null);
  try {
    await client.connect();
    const before = await count();
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await client.query('SELECT count(*) FROM awa.jobs'); // the snapshot is taken here
    const at = new Date();
    log(`chaos: a snapshot is held for ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, ms));
    await client.query('COMMIT').catch(() => (lostAt ??= Date.now()));
    const after = await count();
    return {
      at,
      heldMs: (lostAt ?? Date.now()) - at.getTime(),
      endedByRestart: lostAt !== undefined,
      finishedMeanwhile: before === null || after === null ? null : after - before,
    };
  } catch (error) {
    log(`chaos: no snapshot could be held: ${String(error)}`);
    return null;
  } finally {
    await client.end().catch(() => undefined);
  }
}
