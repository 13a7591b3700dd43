import type { AwaModuleOptions, QueueOptions, RetentionOptions } from './awa-options.interface.js';

export const QUEUE_DEFAULTS: Required<QueueOptions> = {
  concurrency: 10,
  deadlineDuration: 300_000,
  maxAttempts: 25,
  retryBaseDelay: 1_000,
  retryMaxDelay: 86_400_000,
  pollInterval: 1_000,
  prefetch: 0,
  maxSnoozes: 100,
  rateLimit: null,
  keyConcurrency: 0,
  // On, except for a queue with rateLimit or keyConcurrency, and behind a transaction pooler.
  handoff: true,
};

export const RETENTION_DEFAULTS: Required<RetentionOptions> = {
  completed: 86_400_000,
  failed: 604_800_000,
};

export const MODULE_DEFAULTS = {
  heartbeatInterval: 30_000,
  heartbeatStaleAfter: 90_000,
  maintenanceInterval: 30_000,
  rescueBatchSize: 500,
  heartbeatBatchSize: 500,
  migrationsRun: false,
  shutdownTimeout: 30_000,
  maxArgsBytes: 1_048_576,
  orphanSweepInterval: 5_000,
  statementTimeout: 30_000,
  testing: false,
  maxOutputBytes: 65_536,
  maxProgressBytes: 8_192,
  scheduleInterval: 1_000,
} satisfies Partial<AwaModuleOptions>;
