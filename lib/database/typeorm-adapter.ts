import type { Pool } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import type { SqlStatement } from '../sql/sql-statement.js';

/**
 * Every place where TypeORM 0.3 and 1.x differ for the queue, so the rest of the code uses one API.
 * Both are supported peers (`^0.3.20 || ^1.0.0`); test/pack runs an app on each.
 */

/** The pg Pool behind a postgres DataSource (its primary under replication): `driver.master` in 0.3 and 1.x. */
export function pgPoolOf(dataSource: DataSource): Pool {
  return (dataSource.driver as unknown as { master: Pool }).master;
}

/**
 * The DataSource an EntityManager belongs to: `manager.dataSource` in 1.x (`connection` is deprecated there),
 * `manager.connection` in 0.3.
 */
export function dataSourceOfManager(manager: EntityManager): DataSource | undefined {
  const m = manager as unknown as { dataSource?: DataSource; connection?: DataSource };
  return m.dataSource ?? m.connection;
}

/**
 * Runs a statement inside the manager's transaction and returns its rows. Both versions return the
 * rows for SELECT and INSERT, but `[rows, rowCount]` for UPDATE and DELETE: that pair is unwrapped.
 */
export async function queryRowsWithManager<P extends unknown[], R>(
  manager: EntityManager,
  sql: SqlStatement<P, R>,
  values: NoInfer<P>,
): Promise<R[]> {
  const result: unknown = await manager.query(sql.text, values);
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as R[];
  }
  return result as R[];
}
