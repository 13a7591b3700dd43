import { statement } from './sql-statement.js';

/** Which awa migrations the database has applied, read at boot (see SchemaVerifier). */

/** The applied migrations' names (check schemaExists first: it needs the table). */
export const appliedMigrations = statement<[], { names: string[] }>(
  'applied_migrations',
  `
  SELECT coalesce(array_agg(name), '{}') AS names
    FROM (SELECT name FROM awa.schema_migrations) m`,
);

export const schemaExists = statement<[], { present: boolean }>(
  'schema_exists',
  `SELECT to_regclass('awa.schema_migrations') IS NOT NULL AS present`,
);
