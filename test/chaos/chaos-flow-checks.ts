// The invariants of the two flow-controlled queues (issue 16): the rated queue's handler starts keep to
// its limit in every window, no key of the keyed queue holds more leases than keyConcurrency at any
// instant, and no job is stranded: left available, due, while live workers that handle its kind are idle.
import type { RateLimitOptions } from 'nestjs-awa';
import { CHAOS_KINDS, KEY_CONCURRENCY } from './chaos-config.js';
import { percentile } from './chaos-figures.js';
import type { Check, Query } from './chaos-invariants.js';
import { busiestWindow, readStarts } from './chaos-starts.js';

const RATED = CHAOS_KINDS.rated.queue;
const KEYED = CHAOS_KINDS.keyedA.queue;

/** What the flow queues did, for the summary (figures, not verdicts). */
export interface FlowFigures {
  rateLimit: RateLimitOptions;
  /** Handler starts recorded in the rated queue, and the most in one window [x, x + period). */
  ratedStarts: number;
  busiestStarts: number;
  /** The most claims of the rated queue in one window, by their claimed_at (the time the claim's log counts). */
  busiestClaims: number;
  /** Claim (its claimed_at) to handler entry, in ms: the claim statement's own run time included. */
  claimToStartP50: number | null;
  claimToStartMax: number | null;
  /** The most leases one key of the keyed queue held at once. */
  mostKeyLeases: number;
}

/**
 * Leases of each key over time: +1 at each lease insert, -1 at each delete (chaos.claims and
 * chaos.lease_ends, clock_timestamp() inside the writing transaction). A claim takes a key's slot only
 * after the deletion that freed it committed, so the delete's time is before the insert's: the running
 * sum is never high by mistake. At one instant deletions count first, for the same reason.
 */
const KEY_LEASES = `
  WITH ev AS (
    SELECT j.concurrency_key AS key, c.at, 1 AS d FROM chaos.claims c JOIN awa.all_jobs j ON j.id = c.job_id
     WHERE j.queue = $1
    UNION ALL
    SELECT j.concurrency_key, e.at, -1 FROM chaos.lease_ends e JOIN awa.all_jobs j ON j.id = e.job_id
     WHERE j.queue = $1
  ), held AS (
    SELECT key, at, sum(d) OVER (PARTITION BY key ORDER BY at, d ROWS UNBOUNDED PRECEDING)::int AS n FROM ev
  )
  SELECT key, max(n)::int AS most, (array_agg(at ORDER BY n DESC, at))[1] AS at FROM held GROUP BY key`;

export const rateCheckName = (rate: RateLimitOptions) =>
  `no window of ${rate.period} ms holds more than ${rate.limit} handler starts of the rated queue`;
export const KEY_CHECK_NAME = `no key of the keyed queue held more than ${KEY_CONCURRENCY} leases at once`;

export function rateWindowCheck(startsDir: string, rate: RateLimitOptions): Check {
  return {
    name: rateCheckName(rate),
    async run(query) {
      const starts = readStarts(startsDir);
      const { count, from } = busiestWindow(starts, rate.period);
      if (count <= rate.limit) return [];
      const inWindow = starts.filter((s) => s.at >= from! && s.at < from! + rate.period);
      // Each start with its claim's claimed_at (the time its rate log counts), in ms from the window's beginning.
      const claims = await query(
        `SELECT c.job_id::text || '/' || c.run_lease::text AS lease,
                (extract(epoch FROM c.claimed_at) * 1000)::float8 AS ms
           FROM chaos.claims c JOIN unnest($1::text[]) AS s(lease) ON s.lease = c.job_id::text || '/' || c.run_lease::text`,
        [inWindow.map((s) => `${s.jobId}/${s.runLease}`)],
      );
      const claimedAt = new Map(claims.map((c) => [c.lease as string, c.ms as number]));
      const detail = inWindow.map((s) => {
        const claimed = claimedAt.get(`${s.jobId}/${s.runLease}`);
        return `+${s.at - from!}(claim ${claimed === undefined ? '?' : `+${Math.round(claimed - from!)}`}) pid ${s.pid} (prefetch ${s.prefetch})`;
      });
      return [
        `${count} starts in [${new Date(from!).toISOString()}, +${rate.period} ms); ` +
          `${countOver(starts, rate)} window start(s) over the limit; the starts (ms): ${detail.join(', ')}`,
      ];
    },
  };
}

/** How many recorded starts begin a window over the limit: how widespread, not only how bad. */
function countOver(starts: ReturnType<typeof readStarts>, rate: RateLimitOptions): number {
  let over = 0;
  let end = 0;
  for (let i = 0; i < starts.length; i++) {
    while (end < starts.length && starts[end]!.at < starts[i]!.at + rate.period) end++;
    if (end - i > rate.limit) over++;
  }
  return over;
}

export function keyConcurrencyCheck(): Check {
  return {
    name: KEY_CHECK_NAME,
    async run(query) {
      const rows = (await query(KEY_LEASES, [KEYED])).filter((r) => r.most > KEY_CONCURRENCY);
      return rows.length === 0 ? [] : [`${rows.length} key(s), e.g. ${rows.slice(0, 5).map((r) => JSON.stringify(r))}`];
    },
  };
}

/** Window of the stranding check: the run found every queue without a lease and without a claim. */
export interface IdleWindow {
  /** When the last lease of any queue was inserted or deleted (or the last fault ended), JS clock. */
  since: number;
  /** Workers alive and ready since before then, still alive when checked. */
  pids: number[];
}

export const STRANDED_NAME =
  'no job is left available (or due) while live workers that handle its kind are idle (none stranded)';

/**
 * Jobs stranded in an idle window of at least `minMs`: available (or scheduled/retryable and due) since before the window
 * began, unchanged since, in a queue that held no lease during the whole window (no insert, no delete
 * since, none now: every worker had free slots, no key was at its limit, the rate log was drained
 * after one period), and whose kind a worker alive throughout the window handles in that queue.
 * Each is shown with its key's row in awa.flow_keys (or its absence).
 */
export async function strandedJobs(query: Query, idle: IdleWindow, minMs: number): Promise<string[]> {
  // A shorter window proves nothing (a rated job may wait a period, a key's next claim a poll): the run
  // ended with every job finished, or it timed out, which the other checks report.
  if (Date.now() - idle.since < minMs) return [];
  const rows = await query(
    `SELECT j.id::text, j.kind, j.state, j.concurrency_key AS key, j.run_at,
            f.key IS NOT NULL AS key_row, f.has_waiting, f.saturated, f.running,
            (SELECT count(*) FROM awa.instances i
              WHERE i.pid = ANY($2::int[]) AND i.handlers ->> j.kind = j.queue)::int AS idle_handlers
       FROM awa.all_jobs j
       LEFT JOIN awa.flow_keys f ON f.queue = j.queue AND f.key = j.concurrency_key
      WHERE j.state IN ('available', 'scheduled', 'retryable') AND j.run_at <= $1
        AND NOT EXISTS (SELECT FROM chaos.transitions t WHERE t.job_id = j.id AND t.at > $1)
        AND j.created_at <= $1
        AND NOT EXISTS (SELECT FROM awa.active_leases l JOIN awa.all_jobs q ON q.id = l.job_id WHERE q.queue = j.queue)
        AND NOT EXISTS (SELECT FROM chaos.claims c JOIN awa.all_jobs q ON q.id = c.job_id
                         WHERE q.queue = j.queue AND c.at > $1)
        AND NOT EXISTS (SELECT FROM chaos.lease_ends e JOIN awa.all_jobs q ON q.id = e.job_id
                         WHERE q.queue = j.queue AND e.at > $1)
        AND EXISTS (SELECT FROM awa.instances i WHERE i.pid = ANY($2::int[]) AND i.handlers ->> j.kind = j.queue)
      ORDER BY j.id`,
    [new Date(idle.since), idle.pids],
  );
  if (rows.length === 0) return [];
  const seconds = ((Date.now() - idle.since) / 1000).toFixed(1);
  return [
    `${rows.length} job(s) waited over ${seconds} s while live workers that handle their kind were idle ` +
      `(idle_handlers: how many), ` +
      `e.g. ${rows
        .slice(0, 5)
        .map((r) => JSON.stringify(r))
        .join('; ')}`,
  ];
}

/** The stranding check, run by the runner before the workers stop; here its outcome joins the others. */
export function strandedCheck(problems: string[]): Check {
  return { name: STRANDED_NAME, run: async () => problems };
}

export const STALL_NAME = 'the run never stalled with jobs unfinished that the stranding check could not place';

/**
 * A stall the stranding check found nothing in (its conditions exclude the jobs, e.g. a lease is still
 * held): the runner's post-mortem of it, taken before the workers stop, under a name of its own.
 */
export function stallCheck(postMortem: string[]): Check {
  return { name: STALL_NAME, run: async () => postMortem };
}

export async function flowFigures(query: Query, startsDir: string, rateLimit: RateLimitOptions): Promise<FlowFigures> {
  const starts = readStarts(startsDir);
  const claims = await query(
    `SELECT c.job_id::text, c.run_lease::text, (extract(epoch FROM c.claimed_at) * 1000)::float8 AS ms
       FROM chaos.claims c JOIN awa.all_jobs j ON j.id = c.job_id WHERE j.queue = $1 ORDER BY c.claimed_at`,
    [RATED],
  );
  const claimedAt = new Map(claims.map((c) => [`${c.job_id}/${c.run_lease}`, c.ms as number]));
  const lags = starts.flatMap((s) => {
    const at = claimedAt.get(`${s.jobId}/${s.runLease}`);
    return at === undefined ? [] : [s.at - at];
  });
  const claimStarts = claims.map((c) => ({ at: c.ms as number, jobId: '', runLease: '', pid: 0, prefetch: 0 }));
  const [{ most }] = await query(`SELECT coalesce(max(most), 0)::int AS most FROM (${KEY_LEASES}) k`, [KEYED]);
  return {
    rateLimit,
    ratedStarts: starts.length,
    busiestStarts: busiestWindow(starts, rateLimit.period).count,
    busiestClaims: busiestWindow(claimStarts, rateLimit.period).count,
    claimToStartP50: percentile(lags, 50),
    claimToStartMax: percentile(lags, 100),
    mostKeyLeases: most,
  };
}

/** The last insert or delete of any lease (database clock), as JS ms; null before the first claim. */
export async function lastLeaseActivity(query: Query): Promise<number | null> {
  const [{ at }] = await query(
    `SELECT greatest((SELECT max(at) FROM chaos.claims), (SELECT max(at) FROM chaos.lease_ends)) AS at`,
  );
  return at ? (at as Date).getTime() : null;
}
