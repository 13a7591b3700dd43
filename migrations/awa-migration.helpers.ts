import type { QueryRunner } from 'typeorm';

/** Key of the advisory lock that serializes awa migrations across processes. */
export const AWA_MIGRATION_LOCK_KEY = '6182721100002';

/**
 * Runs `statements` once per database: takes a transaction-scoped advisory lock, then skips
 * them if `awa.schema_migrations` already records `name`. So the bundled migrations are safe
 * to run twice, from two processes at once, and both through TypeORM's own migration table
 * and through `migrationsRun: true`.
 */
export async function applyOnce(queryRunner: QueryRunner, name: string, statements: string[]): Promise<void> {
  await withTransaction(queryRunner, async () => {
    await queryRunner.query(`SELECT pg_advisory_xact_lock(${AWA_MIGRATION_LOCK_KEY})`);
    await queryRunner.query('CREATE SCHEMA IF NOT EXISTS awa');
    await queryRunner.query(
      'CREATE TABLE IF NOT EXISTS awa.schema_migrations ' +
        '(name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = await queryRunner.query('SELECT 1 FROM awa.schema_migrations WHERE name = $1', [name]);
    if (done.length > 0) return;
    for (const statement of statements) await queryRunner.query(statement);
    await queryRunner.query('INSERT INTO awa.schema_migrations (name) VALUES ($1)', [name]);
  });
}

/** Reverts `name` if it is recorded, under the same lock. */
export async function revertOnce(queryRunner: QueryRunner, name: string, statements: string[]): Promise<void> {
  await withTransaction(queryRunner, async () => {
    await queryRunner.query(`SELECT pg_advisory_xact_lock(${AWA_MIGRATION_LOCK_KEY})`);
    const table = await queryRunner.query(`SELECT to_regclass('awa.schema_migrations') AS t`);
    if (!table[0]?.t) return;
    const done = await queryRunner.query('SELECT 1 FROM awa.schema_migrations WHERE name = $1', [name]);
    if (done.length === 0) return;
    for (const statement of statements) await queryRunner.query(statement);
    await queryRunner.query('DELETE FROM awa.schema_migrations WHERE name = $1', [name]);
  });
}

/** TypeORM usually runs migrations in a transaction already; open one only when it does not. */
async function withTransaction(queryRunner: QueryRunner, body: () => Promise<void>): Promise<void> {
  if (queryRunner.isTransactionActive) return body();
  await queryRunner.startTransaction();
  try {
    await body();
    await queryRunner.commitTransaction();
  } catch (error) {
    await queryRunner.rollbackTransaction();
    throw error;
  }
}
