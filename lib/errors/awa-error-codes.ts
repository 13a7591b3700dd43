/** Stable codes of every error nestjs-awa throws; match on these (or on the class), never on message text. */
export const AwaErrorCodes = {
  /** A module, queue or enqueue option is missing, of the wrong type, out of range or unknown. */
  invalidOption: 'AWA_INVALID_OPTION',
  /**
   * The app is not set up for nestjs-awa: no TypeORM DataSource, not PostgreSQL, no ScheduleModule, entities missing.
   */
  setup: 'AWA_SETUP',
  /** The awa schema is missing or its migrations are not all applied. */
  schema: 'AWA_SCHEMA',
  /** A @JobHandler is invalid: empty kind, duplicate kind, or bound to an unknown queue. */
  handlerRegistration: 'AWA_HANDLER_REGISTRATION',
  /** An enqueue call was refused before it reached the database. */
  enqueueValidation: 'AWA_ENQUEUE_VALIDATION',
  /** A statement of the queue's own ran past the option statementTimeout and was stopped on the server. */
  statementTimeout: 'AWA_STATEMENT_TIMEOUT',
  /** A test helper's expectation failed (AwaTesting.expectEnqueued, from 'nestjs-awa/testing'). */
  assertion: 'AWA_ASSERTION',
  /** A QueueAdmin call (a job filter, a page, a queue name) was refused before it reached the database. */
  adminValidation: 'AWA_ADMIN_VALIDATION',
  /** A unique job kept conflicting with jobs that finished before they could be read; nothing was enqueued. */
  uniqueConflict: 'AWA_UNIQUE_CONFLICT',
  /** Not a failure: a handler threw JobSnoozedError to put its job back for later, spending no attempt. */
  jobSnoozed: 'AWA_JOB_SNOOZED',
  /** A handler passed job.snooze() or job.progress() a value that cannot be used (bad delay, not JSON, too large). */
  invalidJobValue: 'AWA_INVALID_JOB_VALUE',
  /** JobSchedules was asked about a schedule name that does not exist. */
  scheduleNotFound: 'AWA_SCHEDULE_NOT_FOUND',
  /** Thrown by a handler to back off (RateLimitedError): the job waits again without spending an attempt. */
  rateLimited: 'AWA_RATE_LIMITED',
  /** job.transaction() did not commit: the attempt lost its lease, the job was cancelled, or it was called twice. */
  jobTransaction: 'AWA_JOB_TRANSACTION',
} as const;

export type AwaErrorCode = (typeof AwaErrorCodes)[keyof typeof AwaErrorCodes];
