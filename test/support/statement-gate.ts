import pg from 'pg';
import { queryOnce } from './test-database.js';

/**
 * Holds every statement of one kind on one table at a gate the test opens when it chooses: a
 * statement trigger waits on an advisory lock the gate's own connection holds. Deterministic, where
 * a sleep in the statement would be a guess. `AFTER`: the statement has done its work (its rows
 * written, its conflicts decided) and waits before it returns.
 */
export interface StatementGate {
  /** Statements that reach the trigger wait from now on. */
  close(): Promise<void>;
  /** Lets the waiting statements (and every later one) through. */
  open(): Promise<void>;
  /** Statements waiting at the gate now. */
  waiting(): Promise<number>;
  /** Opens the gate, removes the trigger and closes the gate's connection. */
  remove(): Promise<void>;
}

export async function createStatementGate(
  url: string,
  key: number,
  event: 'INSERT' | 'UPDATE' | 'DELETE',
  table: string,
  timing: 'BEFORE' | 'AFTER' = 'BEFORE',
  /**
   * A row-level gate instead: each row for which this condition (over NEW/OLD) holds waits. Row
   * triggers of one event fire in name order, so the gate (gate_<key>) fires before awa's jobs_* ones.
   */
  rowWhen?: string,
): Promise<StatementGate> {
  const name = `gate_${key}`;
  await queryOnce(
    url,
    `
    CREATE FUNCTION public.${name}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN PERFORM pg_advisory_lock_shared(${key}); PERFORM pg_advisory_unlock_shared(${key}); RETURN NULL; END $$;
    CREATE TRIGGER ${name} ${timing} ${event} ON ${table}
      ${rowWhen === undefined ? 'FOR EACH STATEMENT' : `FOR EACH ROW WHEN (${rowWhen})`} EXECUTE FUNCTION public.${name}()`,
  );
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  return {
    close: async () => void (await holder.query('SELECT pg_advisory_lock($1)', [key])),
    open: async () => void (await holder.query('SELECT pg_advisory_unlock_all()')),
    waiting: async () =>
      (
        await queryOnce<{ n: number }>(
          url,
          `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND objid = $1 AND NOT granted
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          [key],
        )
      )[0]!.n,
    remove: async () => {
      await holder.end();
      await queryOnce(url, `DROP TRIGGER ${name} ON ${table}; DROP FUNCTION public.${name}()`);
    },
  };
}
