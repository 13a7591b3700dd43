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
} as const;

export type AwaErrorCode = (typeof AwaErrorCodes)[keyof typeof AwaErrorCodes];
