import type { ClientBase, QueryResult, QueryResultRow } from 'pg';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { SqlStatement } from '../sql/sql-statement.js';

/** A statement with its values written in as literals, by the escaping of the client that sends it. */
export type InlineStatement = (escapeLiteral: (text: string) => string) => string;

/**
 * `sql` with each `$n` replaced by the literal of values[n - 1] (null: NULL), to send as one string of
 * the simple protocol beside another statement: the extended protocol takes one statement per round
 * trip. The statements given here have no `$` but their placeholders (test/sql checks it).
 */
export function inline<P extends Array<string | null>>(
  sql: SqlStatement<P, unknown>,
  values: NoInfer<P>,
): InlineStatement {
  return (escapeLiteral) =>
    sql.text.replace(/\$(\d+)/g, (_, n: string) => {
      const value = values[Number(n) - 1];
      return value === null || value === undefined ? 'NULL' : escapeLiteral(value);
    });
}

/** What the body of a folded transaction returns: its value, and the statement sent with the COMMIT. */
export interface FoldedBody<T> {
  value: T;
  closing: InlineStatement;
}

/**
 * Runs `body` in a transaction of `dataSource` on a QueryRunner of its own, as DataSource.transaction
 * does, with two round trips fewer: `opening` goes in the round trip of TypeORM's START TRANSACTION,
 * after it, and the body's `closing` in that of its COMMIT, before it, each as one simple-protocol
 * string. TypeORM keeps its own state and subscriber hooks: only the text of those two queries changes.
 * The body gets the opening's rows, or undefined when it could not be folded (a DataSource with an
 * isolationLevel sends a SET after the START TRANSACTION): it then runs that statement itself. A
 * closing that fails stops the string before the COMMIT: the transaction rolls back.
 */
export async function foldedTransaction<T>(
  dataSource: DataSource,
  opening: InlineStatement,
  body: (manager: EntityManager, opened: QueryResultRow[] | undefined) => Promise<FoldedBody<T>>,
): Promise<{ value: T; closed: QueryResultRow[] }> {
  const runner = dataSource.createQueryRunner();
  try {
    const fold = !(dataSource.options as { isolationLevel?: unknown }).isolationLevel;
    const opened = fold
      ? await intercept(runner, /^START TRANSACTION$/i, opening, 'after', () => runner.startTransaction())
      : (await runner.startTransaction(), undefined);
    const { value, closing } = await body(runner.manager, opened);
    // Whatever TypeORM sends first to commit carries the closing ahead of it.
    const closed = await intercept(runner, /[\s\S]*/, closing, 'before', () => runner.commitTransaction());
    if (!closed) throw new Error('nestjs-awa: the transaction ended without its closing statement');
    return { value, closed };
  } catch (error) {
    if (runner.isTransactionActive) await runner.rollbackTransaction().catch(() => undefined);
    throw error;
  } finally {
    await runner.release();
  }
}

/**
 * Runs `action` (a TypeORM transaction step) with its first query matching `match` sent together with
 * `extra` (before or after it) on the runner's pg client; returns extra's rows, undefined if no query
 * matched.
 */
async function intercept(
  runner: QueryRunner,
  match: RegExp,
  extra: InlineStatement,
  where: 'before' | 'after',
  action: () => Promise<void>,
): Promise<QueryResultRow[] | undefined> {
  const own = runner as QueryRunner & { query: QueryRunner['query'] };
  let rows: QueryResultRow[] | undefined;
  const patched = async (text: string, ...rest: unknown[]): Promise<unknown> => {
    if (!match.test(text))
      return (Object.getPrototypeOf(runner) as QueryRunner).query.call(runner, text, ...(rest as []));
    delete (own as Partial<typeof own>).query; // once
    const client = (await runner.connect()) as ClientBase;
    const statement = extra((s) => client.escapeLiteral(s));
    const results = (await client.query(
      where === 'before' ? `${statement};\n${text}` : `${text};\n${statement}`,
    )) as unknown as QueryResult[];
    rows = results[where === 'before' ? 0 : 1]?.rows ?? [];
    return undefined;
  };
  own.query = patched as QueryRunner['query'];
  try {
    await action();
  } finally {
    delete (own as Partial<typeof own>).query;
  }
  return rows;
}
