import './awa.single-copy.js'; // warns if the ESM and the CommonJS build are both loaded
export { AwaModule } from './awa.module.js';
export { JobHandler, type JobHandlerOptions } from './decorators/job-handler.decorator.js';
export { QueueProducer, type EnqueuedJob, type JobLocation } from './producer/queue-producer.js';
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
  JobTransactionBody,
  JobState,
} from './interfaces/job.interface.js';
export type {
  AwaModuleAsyncOptions,
  AwaModuleOptions,
  QueueOptions,
  RetentionOptions,
} from './options/awa-options.interface.js';
export {
  AdminValidationError,
  AwaError,
  AwaErrorCodes,
  AwaOptionError,
  AwaSetupError,
  EnqueueValidationError,
  HandlerRegistrationError,
  JobSnoozedError,
  JobTransactionError,
  JobValueError,
  RateLimitedError,
  ScheduleNotFoundError,
  SchemaError,
  StatementTimeoutError,
  UniqueConflictError,
  type AwaErrorCode,
  type JobTransactionRefusal,
} from './errors/index.js';
export { QueueAdmin, BULK_BATCH_SIZE, JOB_COUNT_CAP, JOB_PAGE_MAX } from './admin/queue-admin.service.js';
export type { JobFilter } from './admin/job-filter.js';
export {
  WORKFLOW_READ_MAX,
  type WorkflowListOptions,
  type WorkflowLocation,
  type WorkflowPage,
  type WorkflowState,
  type WorkflowSummary,
  type WorkflowView,
} from './admin/workflow-admin.js';
export type {
  BulkDeleteResult,
  BulkResult,
  DeleteJobResult,
  JobPage,
  JobPageOptions,
  KeyPage,
  KeyPageOptions,
  KeyState,
  QueueState,
  RetryJobResult,
} from './admin/queue-admin.types.js';
export type { UniqueOptions } from './interfaces/job.interface.js';
export { MAX_GRAPH_EDGES, MAX_GRAPH_JOBS } from './interfaces/workflow.interface.js';
export type { EnqueuedFlow, EnqueuedGraph, FlowJob } from './interfaces/workflow.interface.js';
export type {
  DependencyFailurePolicy,
  DependencyResult,
  DependencyResultsOptions,
  GraphJob,
  StepJob,
  GraphOptions,
} from './interfaces/job.interface.js';
export { MAX_SNOOZE_MS } from './errors/job-snoozed.error.js';
export type { JobSnooze } from './interfaces/job-snooze.js';
export { Periodic, type PeriodicOptions } from './decorators/periodic.decorator.js';
export { JobSchedules } from './schedules/job-schedules.service.js';
export { MAX_MISSED_FIRES, MISSED_GRACE_MS } from './schedules/fire-times.js';
export type {
  ScheduleDefinition,
  ScheduleMissed,
  ScheduleRecord,
  ScheduleSource,
} from './schedules/schedule.interface.js';
export type { RateLimited } from './interfaces/job.interface.js';
export type { RateLimitOptions } from './options/awa-options.interface.js';
// AwaTelemetryModule lives in 'nestjs-awa/telemetry', AwaDashboardModule in 'nestjs-awa/dashboard'.
export {
  OnJobEvent,
  JOB_EVENT_NAMES,
  type JobEventName,
  type OnJobEventOptions,
} from './decorators/on-job-event.decorator.js';
export { JobEventGroups, type JobEventGroupTarget } from './events/job-event-groups.service.js';
export { JOB_EVENT_LAG_CAP, type JobEvent, type JobEventGroupState } from './events/job-event.js';
export type { JobEventsOptions } from './options/job-events.options.js';
