// The second PostgreSQL server of a chaos run (--second-server, issue 18): every worker runs a second,
// named AwaModule on it (chaos-second-app.ts) and the producer enqueues into its queue beside the
// first server's. The run crashes it once (immediate shutdown) and starts it again, at another moment
// than the first server's restart. Its jobs are checked in its own database by the same invariants
// (checkInvariants), plus: no job in the wrong database, and the first server's queues kept completing
// jobs while it was down.
import pg from 'pg';
import { SECOND_KINDS, SECOND_QUEUE } from './chaos-config.js';
import { redeliveryCheck } from './chaos-event-checks.js';
import { handedOffCount } from './chaos-figures.js';
import { INSTRUMENTATION_SQL } from './chaos-instrumentation.js';
import { checkInvariants, EVENT_CHECKS, type Check, type Query } from './chaos-invariants.js';
import type { SecondChaosServer } from './chaos-postgres.js';
import { reconnectMs } from './chaos-reconnect.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** The crash of the second server, as it happened. */
export interface SecondServerFault {
  /** When it was killed (database clock, both servers on this machine). */
  at: Date;
  atSeconds?: number;
  /** From the kill until it accepted connections again. */
  downMs: number;
  /** Leases held on it when it was killed: attempts in flight that died with it. */
  leasesHeld: number;
  /** Jobs the first server's queues completed while it was down (chaos.transitions there). */
  completedOnFirstMeanwhile: number;
  /** From its start until every live instance had its session back and a leader held its lock. */
  reconnectMs: number | null;
}

/** What the second server's part of the report holds. */
export interface SecondServerReport {
  server: string;
  jobs: number;
  states: Record<string, number>;
  fault: SecondServerFault | null;
  events: { stored: number; delivered: number };
  /** Jobs an enqueue handed to an idle worker (eagerly: SECOND_QUEUE_OPTIONS) and done in that attempt. */
  handedOff: number;
}

export const SECOND_PREFIX = 'server 2: ';
export const OTHER_DATABASE_CHECK = "no job is in the other server's database";
export const FIRST_WENT_ON_CHECK = "the first server's queues completed jobs while the second server was down";

export class SecondServerRun {
  readonly query: Query;
  fault: SecondServerFault | null = null;
  /** When it was down or coming back (JS clock): [kill, reconnected + 5 s]. */
  window: [number, number] | undefined;
  private readonly pool: pg.Pool;

  constructor(
    readonly server: SecondChaosServer,
    private readonly log: (line: string) => void,
  ) {
    this.pool = new pg.Pool({ connectionString: server.url, max: 2 });
    this.pool.on('error', () => undefined); // idle connections die in the crash, by design
    this.query = async (text, values) => (await this.pool.query(text, values)).rows;
  }

  /** The side table and triggers, once the first worker has migrated this database. */
  async instrument(): Promise<void> {
    for (const statement of INSTRUMENTATION_SQL) await this.query(statement);
  }

  /** Jobs finished and leases held; undefined while it is down. */
  async status(): Promise<{ finished: number; leases: number } | undefined> {
    try {
      const [r] = await this.query(
        `SELECT (SELECT count(*) FROM awa.all_jobs WHERE state IN ('completed', 'failed'))::int AS finished,
                (SELECT count(*) FROM awa.active_leases)::int AS leases`,
      );
      return r;
    } catch {
      return undefined;
    }
  }

  /**
   * Kills it (immediate shutdown), keeps it down `downMs`, counts the first server's completions
   * meanwhile (through `first`), starts it and waits for the instances (`live` of them) to come back.
   */
  async crashAndRestart(first: Query, downMs: number, live: (since: number) => number): Promise<string[]> {
    this.log('chaos: killing the second PostgreSQL server (immediate shutdown)');
    const [{ n: leasesHeld }] = await this.query('SELECT count(*)::int AS n FROM awa.active_leases');
    const [{ at }] = await first('SELECT clock_timestamp() AS at');
    const stoppedAt = Date.now();
    await this.server.crash();
    await sleep(downMs);
    const [{ n: completedOnFirstMeanwhile }] = await first(
      `SELECT count(*)::int AS n FROM chaos.transitions WHERE new_state = 'completed' AND at >= $1`,
      [at],
    );
    await this.server.start();
    const upAt = Date.now();
    const reconnect = await reconnectMs(this.query, () => live(stoppedAt));
    this.fault = { at, downMs: upAt - stoppedAt, leasesHeld, completedOnFirstMeanwhile, reconnectMs: reconnect };
    this.window = [stoppedAt, Date.now() + 5_000];
    this.log(
      `chaos: second server back after ${upAt - stoppedAt} ms (it held ${leasesHeld} lease(s); the first ` +
        `server completed ${completedOnFirstMeanwhile} job(s) meanwhile); instances reconnected ${reconnect ?? 'never'} ms later`,
    );
    return reconnect === null
      ? [
          'after the second server restarted, the instances did not all reconnect (or no leader was elected) within 30 s',
        ]
      : [];
  }

  /** Waits (up to 30 s) for the durable-event group `chaos` to acknowledge every event stored here. */
  async eventGroupCaughtUp(): Promise<string[]> {
    for (const until = Date.now() + 30_000; ; await sleep(100)) {
      const [{ lag }] = await this.query(
        `SELECT count(*)::int AS lag FROM awa.job_events e, awa.event_group_positions p
          WHERE p."group" = 'chaos' AND (e.tx, e.id) > (p.position_tx, p.position_id)`,
      );
      if (lag === 0) return [];
      if (Date.now() > until) return [`the durable-event group had ${lag} event(s) left on the second server`];
    }
  }

  /**
   * The invariants in this database (named with SECOND_PREFIX); `pids`: the workers killed, frozen or
   * stopped (a delivery of theirs may come again, as may one in this server's crash).
   */
  async check(first: Query, jobs: number, pids: number[]): Promise<{ checked: string[]; violations: string[] }> {
    const crash = this.fault && {
      from: this.fault.at.getTime() - 1_000,
      to: this.fault.at.getTime() + this.fault.downMs + (this.fault.reconnectMs ?? 30_000) + 5_000,
    };
    const own = await checkInvariants(
      this.query,
      jobs,
      [...EVENT_CHECKS, redeliveryCheck(() => ({ pids, restart: crash })), this.otherDatabaseCheck(first)],
      SECOND_KINDS.counted,
      // The claims committed in the second before the crash (immediate shutdown) may be lost; `at` is
      // the database clock just before crash() was called, which may take a moment to land.
      this.fault && { from: this.fault.at.getTime() - 1_000, to: this.fault.at.getTime() + 2_000 },
    );
    const checked = own.checked.map((name) => SECOND_PREFIX + name);
    const violations = own.violations.map((v) => SECOND_PREFIX + v);
    // Robust: the crash comes while the producer still enqueues into the first server, with no other
    // fault of the first server's during it (the runner injects one fault at a time).
    if (this.fault) {
      checked.push(FIRST_WENT_ON_CHECK);
      if (this.fault.completedOnFirstMeanwhile === 0) violations.push(`${FIRST_WENT_ON_CHECK}: none did`);
    }
    return { checked, violations };
  }

  /** Each job in the database of its queue: none of the first server's here, none of this one's there. */
  private otherDatabaseCheck(first: Query): Check {
    return {
      name: OTHER_DATABASE_CHECK,
      run: async (query) => {
        const [here] = await query(
          'SELECT count(*)::int AS n, array_agg(DISTINCT queue) AS queues FROM awa.all_jobs WHERE queue <> $1',
          [SECOND_QUEUE],
        );
        const [there] = await first(
          `SELECT count(*)::int AS n FROM awa.all_jobs WHERE queue = $1 OR kind LIKE 'chaos.billing.%'`,
          [SECOND_QUEUE],
        );
        return [
          ...(here.n > 0 ? [`${here.n} job(s) of the queues ${here.queues} on the second server`] : []),
          ...(there.n > 0 ? [`${there.n} job(s) of the second server's queue on the first`] : []),
        ];
      },
    };
  }

  async report(jobs: number, startedAt: Date | null): Promise<SecondServerReport> {
    const rows = await this.query('SELECT state, count(*)::int AS n FROM awa.all_jobs GROUP BY state');
    const [events] = await this.query(
      `SELECT (SELECT count(*) FROM awa.job_events)::int AS stored,
              (SELECT count(*) FROM chaos.event_deliveries)::int AS delivered`,
    );
    return {
      server: this.server.description,
      jobs,
      states: Object.fromEntries(rows.map((r) => [r.state, r.n])),
      fault: this.fault && {
        ...this.fault,
        atSeconds: startedAt ? (this.fault.at.getTime() - startedAt.getTime()) / 1000 : 0,
      },
      events,
      handedOff: await handedOffCount(this.query),
    };
  }

  async dispose(): Promise<void> {
    await this.pool.end().catch(() => undefined);
    await this.server.stop();
  }
}
