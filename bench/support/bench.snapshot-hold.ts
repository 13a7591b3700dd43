import pg from 'pg';

/** A snapshot held open on a database for a while, as a long report or an ANALYZE holds one. */
export interface SnapshotHold {
  /** Resolves once the snapshot was taken and released again (or the hold was ended). */
  done: Promise<void>;
  /** Ends the hold now. */
  end(): Promise<void>;
}

/**
 * From `atMs` on, for `forMs`, keeps a REPEATABLE READ transaction open on `url` with its snapshot
 * taken: the server may then drop no row version, and mark no index entry dead, that it could see.
 */
export function holdSnapshot(url: string, atMs: number, forMs: number, log: (line: string) => void): SnapshotHold {
  const client = new pg.Client({ connectionString: url, application_name: 'bench-snapshot-hold' });
  let ended = false;
  let wake: () => void = () => undefined;
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => (clearTimeout(timer), resolve());
    });
  const done = (async () => {
    await pause(atMs);
    if (ended) return;
    await client.connect();
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await client.query('SELECT 1');
    log(`  a snapshot is held from now on, for ${forMs / 1_000} s`);
    await pause(forMs);
    await client.query('COMMIT');
    log('  the snapshot was released');
    await client.end();
  })();
  return {
    done,
    async end() {
      ended = true;
      wake();
      await done.catch(() => undefined);
    },
  };
}
