export * from './sql-statement.js';
export * as jobsSql from './jobs.sql.js';
export * as workerSql from './worker.sql.js';
export * as maintenanceSql from './maintenance.sql.js';
export * as instancesSql from './instances.sql.js';
export * as migrationsSql from './migrations.sql.js';
export * as sessionSql from './session.sql.js';
export * as leaderSql from './leader.sql.js';
export * as testingSql from './testing.sql.js';
