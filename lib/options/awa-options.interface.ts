import type { ModuleMetadata } from '@nestjs/common';
import type { JobEventsOptions } from './job-events.options.js';

export type { JobEventsOptions };
import type { ScheduleDefinition } from '../schedules/schedule.interface.js';

/** Options of one queue. Every instance applies them to the jobs it claims from that queue. */
export interface QueueOptions {
  /** Handlers of this queue running at once on one instance. Default 10. */
  concurrency?: number;
  /** Hard deadline set at claim, in ms; 0 disables it. Default 300_000 (5 min). */
  deadlineDuration?: number;
  /** Attempts before a job fails for good (a job's own maxAttempts wins). Default 25. */
  maxAttempts?: number;
  /** Retry delay base in ms: base * 2^(attempt-1), plus up to 25% jitter. Default 1000. */
  retryBaseDelay?: number;
  /** Upper bound of the retry delay in ms. Default 86_400_000 (24 h). */
  retryMaxDelay?: number;
  /** Poll interval in ms, the fallback when no notification arrives. Default 1000. */
  pollInterval?: number;
  /**
   * Jobs claimed beyond the free slots and held (leased, heartbeated) in memory until a slot frees,
   * so that one claim statement serves many short jobs. Default 0. Raise it (e.g. 500) for high
   * throughput of short jobs; keep it 0 for long jobs, which it would hoard from other instances.
   */
  prefetch?: number;
  /**
   * Times a job of this queue may snooze (`return job.snooze(ms)`); the snooze after that fails the
   * job for good, with an entry in its `errors`. 0 forbids snoozing. Default 100.
   */
  maxSnoozes?: number;
  /**
   * Fleet-wide rate limit: at most `limit` handlers of this queue are entered in any window of `period`
   * ms, summed over all instances, enforced by the claim. Default null (none). A claimed job whose
   * handler cannot be entered within period / 40 (at least 10 ms; longer on an instance whose claims
   * cannot start that fast) of its claim is given back unstarted, and the claims count their limit over
   * period + that wait (docs/flow-control.md).
   */
  rateLimit?: RateLimitOptions | null;
  /**
   * Fleet-wide limit of running attempts per `concurrencyKey` (enqueue option): at most this many
   * attempts of one key hold a lease at any instant, over all instances; keys are served round-robin.
   * Only keyed jobs are claimed from such a queue. Default 0 (off).
   */
  keyConcurrency?: number;
  /**
   * Hands a job to an idle worker at enqueue, skipping the worker's claim (docs/handoff.md): a
   * worker of this queue with a free slot and nothing to claim leaves an offer, and `enqueue()`
   * of a job that runs now takes it and inserts the job already leased to that worker, which starts
   * it when the notification comes. Cuts the pickup of an idle queue by the claim's round trip.
   * The enqueue decides: a producer-only app's module needs it too (it has it by default). Default
   * true, except for a queue with `rateLimit` or `keyConcurrency` and behind a transaction pooler,
   * where it is off (and refused when set).
   *
   * `'eager'`: the same, but the worker hears of the job when its insert commits, before PostgreSQL
   * has flushed that commit to disk, and `enqueue()` returns once it has (docs/handoff.md): the
   * pickup is shorter by that flush. If PostgreSQL crashes in between, `enqueue()` fails and the job
   * is gone, though its handler may have started (and its id may be given to a later job).
   */
  handoff?: boolean | 'eager';
}

/** A queue's rate limit: `limit` attempt starts per `period` ms. */
export interface RateLimitOptions {
  /** Attempts that may start in one window. An integer from 1 to 1,000,000. */
  limit: number;
  /** The window, in ms. */
  period: number;
}

/** How long finished jobs are kept before the maintenance leader deletes them, in ms. */
export interface RetentionOptions {
  /** Default 86_400_000 (24 h). 0 keeps completed jobs forever. */
  completed?: number;
  /** Failed and cancelled jobs. Default 604_800_000 (7 days). 0 keeps them forever. */
  failed?: number;
}

export interface AwaModuleOptions {
  /**
   * Name of this module, when an app runs several, each on a DataSource of its own
   * (docs/multiple-databases.md). Unset: the default module, which alone has the queue 'default'.
   */
  name?: string;
  /** Name of the TypeORM DataSource to use. Default: the default DataSource. */
  dataSource?: string;
  /**
   * Name of a TypeORM DataSource (a read replica) for the read-only queries of QueueAdmin and the
   * dashboard. Default: none, they read from `dataSource`.
   */
  readDataSource?: string;
  /** Queues and their options. The queue 'default' always exists. */
  queues?: Record<string, QueueOptions>;
  /** How often each instance refreshes the heartbeats of its leases, in ms. Default 30_000. */
  heartbeatInterval?: number;
  /** A lease whose heartbeat is older than this is rescued, in ms. Default 90_000. */
  heartbeatStaleAfter?: number;
  /** How often the maintenance leader runs its sweeps, in ms. Default 30_000. */
  maintenanceInterval?: number;
  /** Rows per rescue sweep. Default 500. */
  rescueBatchSize?: number;
  /** Leases per heartbeat statement. Default 500. */
  heartbeatBatchSize?: number;
  /** Apply the bundled migrations at boot, under an advisory lock. Default false. */
  migrationsRun?: boolean;
  /** Time in-flight handlers get to finish on shutdown, in ms. Default 30_000. */
  shutdownTimeout?: number;
  /** Largest accepted job args, in bytes of JSON. Default 1_048_576 (1 MiB). */
  maxArgsBytes?: number;
  /**
   * How often the maintenance leader rescues the leases of dead instances (and vacuums a hot table
   * that gained many dead rows, and analyzes one whose planner statistics are far off its size), in
   * ms. Default 5_000. Each instance probes its own session every quarter of it.
   */
  orphanSweepInterval?: number;
  /**
   * How the leader tells that an instance died. 'session' (default): the instance holds an advisory
   * lock on its own connection, which PostgreSQL drops the moment the process dies. 'heartbeat': only
   * the instance row's heartbeat age counts. Always 'heartbeat' with connectionMode 'transaction-pooler'.
   */
  livenessProbe?: 'session' | 'heartbeat';
  /**
   * 'direct' (default): PostgreSQL or a session-mode pooler; named prepared statements, LISTEN,
   * session advisory locks. 'transaction-pooler' (PgBouncer in transaction mode): unnamed statements,
   * polling instead of LISTEN, liveness by heartbeat, and leadership as a row lease with a term.
   */
  connectionMode?: 'direct' | 'transaction-pooler';
  /**
   * Longest a statement of the queue's own may run, in ms (0: no limit), so that one write stuck
   * behind a lock cannot hold up the heartbeats queued behind it. Default 30_000.
   */
  statementTimeout?: number;
  /** Retention of finished jobs. */
  retention?: RetentionOptions;
  /** Delivery of durable job events to @OnJobEvent groups (docs/durable-events.md). */
  jobEvents?: JobEventsOptions;
  /**
   * Manual mode for tests: no workers, heartbeat, maintenance, instance session or LISTEN run in the
   * background, so `app.close()` returns at once; jobs run only when a test drains them with
   * `AwaTesting` (import `AwaTestingModule` from 'nestjs-awa/testing', which needs this). Default false.
   */
  testing?: boolean;
  /**
   * Largest stored handler return value (`output`), in bytes of JSON. A larger one is not stored: the
   * job still completes, with output null and an entry in its `errors`. Default 65_536 (64 KiB).
   */
  maxOutputBytes?: number;
  /** Largest value `job.progress(value)` accepts, in bytes of JSON; a larger one throws. Default 8_192. */
  maxProgressBytes?: number;
  /** Periodic jobs declared in options (next to those of @Periodic). */
  schedules?: ScheduleDefinition[];
  /** How often the maintenance leader enqueues due schedule fires, in ms. Default 1_000. */
  scheduleInterval?: number;
  /** The schedule tick as a cron expression (e.g. '* * * * * *'), instead of scheduleInterval. */
  scheduleCron?: string;
  /** The maintenance sweep as a cron expression (e.g. '*\/30 * * * * *'), instead of maintenanceInterval. */
  maintenanceCron?: string;
  /** The orphan sweep as a cron expression (e.g. '*\/5 * * * * *'), instead of orphanSweepInterval. */
  orphanSweepCron?: string;
}

/** forRootAsync: options from a factory, like TypeOrmModule.forRootAsync. */
export interface AwaModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  /** Name of this module (see AwaModuleOptions.name); it must be known before the factory runs. */
  name?: string;
  /** Name of the TypeORM DataSource to use; it must be known before the factory runs. */
  dataSource?: string;
  /** Name of the read-replica DataSource (see AwaModuleOptions.readDataSource). */
  readDataSource?: string;
  useFactory: (...args: any[]) => AsyncFactoryOptions | Promise<AsyncFactoryOptions>;
  inject?: any[];
}

/** What a forRootAsync factory returns: the options less those forRootAsync takes itself. */
export type AsyncFactoryOptions = Omit<AwaModuleOptions, 'dataSource' | 'name' | 'readDataSource'>;
