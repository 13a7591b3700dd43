import { statement } from './sql-statement.js';

/** Statements on a connection itself: LISTEN, its statement timeout, ending another backend. */

/**
 * Ends the backend $1 of a connection the queue has given up on (its statement outlived
 * statementTimeout), so that the statement cannot still run, or commit, once its lock frees.
 */
export const terminateBackend = statement<[pid: number], { terminated: boolean }>(
  'terminate_backend',
  `SELECT pg_terminate_backend($1::int) AS terminated`,
);

/** statementTimeout ($1 ms, as text) for the rest of the current transaction only. */
export const setLocalStatementTimeout = statement<[ms: string], { statement_timeout: string }>(
  'set_local_statement_timeout',
  `SELECT set_config('statement_timeout', $1::text, true) AS statement_timeout`,
);

/** LISTEN on one of the queue's channels (identifiers cannot be parameters; channels are constants). */
export const listen = (channel: string) =>
  statement<[]>(`listen_${channel}`, `LISTEN "${channel.replace(/"/g, '""')}"`);
