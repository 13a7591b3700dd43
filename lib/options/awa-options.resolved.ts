import type { ScheduleMissed } from '../sql/schedules.sql.js';
import type { JobEventsOptions, QueueOptions, RetentionOptions } from './awa-options.interface.js';

// The options as the rest of the package reads them. Types only, on the ground floor: every area
// imports them, so this file imports nothing but other declarations (see CONTRIBUTING, Layering).

export type ResolvedQueueOptions = Required<QueueOptions> & { name: string };

/** A checked schedule definition. `queue` stays undefined until the handlers are known (boot). */
export interface CheckedSchedule {
  name: string;
  cron: string;
  kind: string;
  args: unknown;
  queue: string | undefined;
  timeZone: string | null;
  missed: ScheduleMissed;
  /** The concurrency key of each fire's job (null: none). */
  concurrencyKey: string | null;
}

/** Module options after validation, with every default filled in. */
export interface ResolvedAwaOptions {
  /** The module's name; undefined for the default module. */
  name: string | undefined;
  dataSource: string | undefined;
  readDataSource: string | undefined;
  queues: ReadonlyMap<string, ResolvedQueueOptions>;
  heartbeatInterval: number;
  heartbeatStaleAfter: number;
  maintenanceInterval: number;
  rescueBatchSize: number;
  heartbeatBatchSize: number;
  migrationsRun: boolean;
  shutdownTimeout: number;
  maxArgsBytes: number;
  orphanSweepInterval: number;
  livenessProbe: 'session' | 'heartbeat';
  connectionMode: 'direct' | 'transaction-pooler';
  statementTimeout: number;
  retention: Required<RetentionOptions>;
  jobEvents: Required<JobEventsOptions>;
  testing: boolean;
  maxOutputBytes: number;
  maxProgressBytes: number;
  /** Schedules of the option `schedules`, checked. */
  schedules: CheckedSchedule[];
  scheduleInterval: number;
  /** Set: the tick runs on this cron instead of every ...Interval ms (which then holds its shortest gap). */
  scheduleCron: string | undefined;
  maintenanceCron: string | undefined;
  orphanSweepCron: string | undefined;
}
