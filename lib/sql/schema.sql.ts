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

/** LISTEN on one of the queue's channels (identifiers cannot be parameters; channels are constants). */
export const listen = (channel: string) => statement(`listen_${channel}`, `LISTEN "${channel.replace(/"/g, '""')}"`);
