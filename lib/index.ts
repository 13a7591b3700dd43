import './awa.single-copy.js'; // warns if the ESM and the CommonJS build are both loaded
export { AwaModule } from './awa.module.js';
export { JobHandler, type JobHandlerOptions } from './decorators/job-handler.decorator.js';
export { QueueProducer, type EnqueuedJob } from './producer/queue-producer.js';
export { HeartbeatService, type HeartbeatReport } from './heartbeat/heartbeat.service.js';
export { MaintenanceService, type SweepReport } from './maintenance/maintenance.service.js';
export { AwaActiveLeaseEntity, AwaEntities, AwaInstanceEntity, AwaJobEntity } from './entities/index.js';
// The migration classes live in 'nestjs-awa/migrations'; the root keeps the list for convenience.
export { AwaMigrations } from '../migrations/index.js';
export { DEFAULT_QUEUE, PRIORITY_MAX, PRIORITY_MIN } from './awa.constants.js';
export { AbortReasons, RescueErrors } from './awa.messages.js';
export { JOB_STATES } from './interfaces/job.interface.js';
export type {
  CancelResult,
  EnqueueManyItem,
  EnqueueOptions,
  Job,
  JobError,
  JobHandlerFn,
  JobRecord,
  JobState,
} from './interfaces/job.interface.js';
export type {
  AwaModuleAsyncOptions,
  AwaModuleOptions,
  QueueOptions,
  RetentionOptions,
} from './options/awa-options.interface.js';
export {
  AwaError,
  AwaErrorCodes,
  AwaOptionError,
  AwaSetupError,
  EnqueueValidationError,
  HandlerRegistrationError,
  SchemaError,
  StatementTimeoutError,
  type AwaErrorCode,
} from './errors/index.js';
export { AwaDashboardModule } from './dashboard/dashboard.module.js';
export type { AwaDashboardOptions } from './dashboard/dashboard.options.js';
