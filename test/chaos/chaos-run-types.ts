// The chaos run's configuration, its defaults, and its report (run-chaos.ts runs it; chaos-summary.ts
// prints the report; chaos-args.ts reads the CLI flags into a configuration).
import type { RateLimitOptions } from 'nestjs-awa';
import { DEFAULT_MIX, DEFAULT_RATE_LIMIT, type ChaosMix } from './chaos-config.js';
import type { FlowFigures } from './chaos-flow-checks.js';
import type { RecoveryFigures } from './chaos-figures.js';
import type { SlowNetworkRecord } from './chaos-slow-network.js';
import type { FreezeRecord } from './chaos-freeze.js';
import type { SnapshotRecord } from './chaos-snapshot.js';
import type { DeadRowsRecord } from './chaos-dead-rows.js';
import type { SecondServerReport } from './chaos-second-server.js';

export interface ChaosConfig {
  /** Jobs to enqueue. */
  jobs: number;
  /** Enqueue rate, jobs per second. */
  rate: number;
  /** Worker processes kept running (a killed one is replaced at once). */
  workers: number;
  /** A random worker is SIGKILLed every killEveryMs[0]..killEveryMs[1] ms. */
  killEveryMs: [number, number];
  /** Restart PostgreSQL once, when this fraction of the jobs has been enqueued; null: never. */
  restartAt: number | null;
  /** How long PostgreSQL stays down in the restart. */
  downMs: number;
  /** Freeze one worker's connections once, when this fraction of the jobs has been enqueued; null: never. */
  freezeAt: number | null;
  /** How long they stay frozen: longer than heartbeatStaleAfter, so that its leases are rescued meanwhile. */
  freezeMs: number;
  /**
   * SIGSTOP one worker once, when this fraction of the jobs has been enqueued, for freezeMs; null: never.
   * Its connections stay open: its job.transactions hold their fences until the server's idle limit
   * (heartbeatStaleAfter) ends them, and only then can its leases be rescued.
   */
  stopAt: number | null;
  /**
   * Hold a snapshot open once (chaos-snapshot.ts), when this fraction of the jobs has been enqueued,
   * for snapshotMs, while the other faults go on; null: never.
   */
  snapshotAt: number | null;
  snapshotMs: number;
  /**
   * Slow every worker's connections once (chaos-slow-network.ts), when this fraction of the jobs has been
   * enqueued, by slowLatencyMs each way for slowMs, while the other faults go on; null: never.
   */
  slowAt: number | null;
  slowMs: number;
  slowLatencyMs: number;
  /**
   * Leave a burst of dead rows in awa.active_leases every deadRowsEveryMs from the boot to the end
   * (chaos-dead-rows.ts), so that the leaders vacuum it among the faults; null: never.
   */
  deadRowsEveryMs: number | null;
  /** Gives up (and fails) if the jobs are not all finished by then, counted from the first enqueue. */
  timeoutMs: number;
  mix: ChaosMix;
  /** The rated queue's limit. */
  rateLimit: RateLimitOptions;
  /**
   * Once everything is enqueued: when no lease was taken or given back for this long while jobs are
   * still unfinished, the run stops waiting and checks them for stranding (rather than timing out).
   */
  stallMs: number;
  /**
   * A second PostgreSQL server (always a private embedded one): every worker runs a second, named
   * AwaModule on it, the producer enqueues `secondJobs` jobs into its queue (0: a fifth of `jobs`),
   * and it is crashed (immediate shutdown) once, when secondStopAt of the jobs were enqueued (null:
   * never), for secondDownMs. See chaos-second-server.ts.
   */
  secondServer: boolean;
  secondJobs: number;
  secondStopAt: number | null;
  secondDownMs: number;
  /** Progress lines. */
  log: (line: string) => void;
}

export interface RestartRecord {
  /** When it began (database clock). */
  at: Date;
  /** Seconds into the run (from the first enqueue). */
  atSeconds?: number;
  /** From the stop until PostgreSQL accepted connections again. */
  downMs: number;
  /** From then until every live instance had its session back and a leader held the lock. */
  reconnectMs: number | null;
  /** Workers that were booting during the restart and gave up (each was replaced). */
  bootFailures: number;
}

export interface ChaosReport {
  ok: boolean;
  violations: string[];
  /** The invariants checked (all of them, passed or not). */
  checked: string[];
  server: string;
  jobs: number;
  states: Record<string, number>;
  /** Jobs an enqueue handed to an idle worker (queue option handoff): their first attempt began at their insert. */
  handedOff: number;
  seconds: number;
  jobsPerSecond: number;
  peakPerSecond: number;
  kills: number;
  recovery: RecoveryFigures;
  errors: Record<string, number>;
  restart: RestartRecord | null;
  freeze: FreezeRecord | null;
  /** The SIGSTOP fault (see stopAt). */
  stop: FreezeRecord | null;
  /** The held snapshot (see snapshotAt). */
  snapshot: SnapshotRecord | null;
  /** The slowed worker (see slowAt). */
  slow: SlowNetworkRecord | null;
  /** The dead-row load (see deadRowsEveryMs). */
  deadRows: DeadRowsRecord | null;
  flow: FlowFigures;
  /** The workflow load: graphs, their steps, and the steps by state (included in `states`). */
  workflows: { graphs: number; steps: number; states: Record<string, number> };
  /** The durable-event group: events stored, deliveries recorded, events delivered more than once. */
  events: { stored: number; delivered: number; redelivered: number };
  /** The second server's jobs, its crash and its figures (--second-server). */
  second: SecondServerReport | null;
  /** Totals over all worker processes' logs. */
  logs: {
    leaseLost: number;
    leaderAcquired: number;
    sessionLost: number;
    writeRetries: number;
    eventLeaseLost: number;
  };
  summary: string;
}

export const DEFAULT_CHAOS_CONFIG: ChaosConfig = {
  jobs: 5_000,
  // Below what 3 workers on a small machine sustain while being killed, so that recovery times
  // measure the rescue, not a growing backlog.
  rate: 100,
  workers: 3,
  killEveryMs: [2_000, 4_000],
  restartAt: 0.4,
  downMs: 1_000,
  freezeAt: 0.7,
  freezeMs: 4_000,
  stopAt: 0.55,
  snapshotAt: 0.1,
  snapshotMs: 8_000,
  // Between the snapshot and the restart; 30 ms each way outlasts the rated queue's first entry wait.
  slowAt: 0.25,
  slowMs: 6_000,
  slowLatencyMs: 30,
  deadRowsEveryMs: 2_000,
  timeoutMs: 0, // 0: the production time plus 120 s
  mix: DEFAULT_MIX,
  rateLimit: DEFAULT_RATE_LIMIT,
  stallMs: 6_000,
  secondServer: false,
  secondJobs: 0,
  // Before the first server's restart (0.4): one fault at a time, so the first server's queues are
  // undisturbed while the second is down.
  secondStopAt: 0.2,
  secondDownMs: 2_000,
  log: () => undefined,
};
