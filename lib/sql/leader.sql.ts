import { millis, statement } from './sql-statement.js';

/**
 * Maintenance leadership, in one of two forms. Direct connections: a session-level advisory lock
 * ($1, MAINTENANCE_LOCK_KEY) held on the instance session, freed by PostgreSQL with that session.
 */

/** Takes the leader lock $1 on this session if no other session holds it. */
export const tryMaintenanceLock = statement<[key: string], { acquired: boolean }>(
  'try_maintenance_lock',
  `SELECT pg_try_advisory_lock($1::bigint) AS acquired`,
);

export const releaseMaintenanceLock = statement<[key: string], { released: boolean }>(
  'release_maintenance_lock',
  `SELECT pg_advisory_unlock($1::bigint) AS released`,
);

/**
 * Behind a transaction pooler (connectionMode 'transaction-pooler', where a session advisory lock
 * would land on whichever server connection the pooler picked): a row lease in awa.leader. One
 * row per leadership ($1, e.g. 'maintenance'): its holder, a term that grows with every change of
 * hands (or whenever the holder lost track of its own), and expires_at, on the database clock.
 */

/** The term of a lease this holder claimed or still holds. */
export interface LeaderTerm {
  term: string;
}

/**
 * Takes or renews lease $1 for instance $2, which believes it holds term $3 (NULL: none), for $4 ms.
 * Succeeds if the lease is free, expired, or already $2's; the term stays only when $2 renews the
 * very term it holds before it expired, and grows otherwise. Returns the term, or no row.
 * Atomic: ON CONFLICT locks the row, so two claimants of an expired lease cannot both win.
 * A lease seen live in another's hands is left alone without that lock: the leader's fenced
 * transaction holds the row FOR SHARE, and the other instances' every tick would otherwise wait
 * for it (the caller bounds what wait remains with a lock_timeout).
 */
export const claimLeadership = statement<
  [name: string, holder: string, term: string | null, durationMs: number],
  LeaderTerm
>(
  'claim_leadership',
  `
  INSERT INTO awa.leader AS l (name, holder, term, expires_at)
  SELECT $1::text, $2::text, 1, now() + ${millis('$4')}
   WHERE NOT EXISTS (SELECT 1 FROM awa.leader o WHERE o.name = $1 AND o.holder <> $2 AND o.expires_at > now())
  ON CONFLICT (name) DO UPDATE
     SET holder = EXCLUDED.holder,
         term = CASE WHEN l.holder = EXCLUDED.holder AND l.term = $3::bigint AND l.expires_at > now()
                     THEN l.term ELSE l.term + 1 END,
         expires_at = EXCLUDED.expires_at
   WHERE l.holder = EXCLUDED.holder OR l.expires_at <= now()
  RETURNING l.term::text`,
);

/**
 * The fence, first in every transaction of the leader's maintenance writes: a row only if $2 still
 * holds lease $1 in term $3. FOR SHARE keeps the row locked until the transaction ends: a takeover
 * (claimLeadership, which locks the row for update) waits for these writes to commit, and then
 * finds the lease as this holder left it. No row: deposed, write nothing.
 */
export const fenceLeadership = statement<[name: string, holder: string, term: string], LeaderTerm>(
  'fence_leadership',
  `
  SELECT term::text FROM awa.leader
   WHERE name = $1 AND holder = $2 AND term = $3::bigint AND expires_at > now()
     FOR SHARE`,
);

/** Gives up lease $1 held by $2 in term $3: the next claimant takes it at once. */
export const resignLeadership = statement<[name: string, holder: string, term: string]>(
  'resign_leadership',
  `
  UPDATE awa.leader SET expires_at = now()
   WHERE name = $1 AND holder = $2 AND term = $3::bigint AND expires_at > now()`,
);
