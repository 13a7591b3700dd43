import { statement } from './sql-statement.js';

/** Which awa migrations the database has applied (check schemaExists first: it needs the table). */
export const appliedMigrations = statement('applied_migrations', `
  SELECT coalesce(array_agg(name), '{}') AS names
    FROM (SELECT name FROM awa.schema_migrations) m`);

export const schemaExists = statement('schema_exists',
  `SELECT to_regclass('awa.schema_migrations') IS NOT NULL AS present`);

export const tryMaintenanceLock = statement('try_maintenance_lock',
  `SELECT pg_try_advisory_lock($1::bigint) AS acquired`);

export const releaseMaintenanceLock = statement('release_maintenance_lock',
  `SELECT pg_advisory_unlock($1::bigint) AS released`);

/**
 * Ends the backend $1 of a connection the queue has given up on (its statement outlived
 * statementTimeout), so that the statement cannot still run, or commit, once its lock frees.
 */
export const terminateBackend = statement('terminate_backend', `SELECT pg_terminate_backend($1::int) AS terminated`);

/** statementTimeout ($1 ms, as text) for the rest of the current transaction only. */
export const setLocalStatementTimeout = statement('set_local_statement_timeout',
  `SELECT set_config('statement_timeout', $1::text, true) AS statement_timeout`);

/** LISTEN on one of the queue's channels (identifiers cannot be parameters; channels are constants). */
export const listen = (channel: string) => statement(`listen_${channel}`, `LISTEN "${channel.replace(/"/g, '""')}"`);
