import pg from 'pg';

/** The bench's own connection to a scenario database, for completion checks and seeding. */
export class DbObserver {
  private readonly client: pg.Client;

  constructor(readonly url: string) {
    this.client = new pg.Client({ connectionString: url, application_name: 'awa-bench-observer' });
  }

  async connect(): Promise<void> {
    await this.client.connect();
  }

  async end(): Promise<void> {
    await this.client.end().catch(() => undefined);
  }

  async query<R extends pg.QueryResultRow = any>(text: string, values: unknown[] = []): Promise<R[]> {
    return (await this.client.query<R>(text, values)).rows;
  }

  /** The server's WAL insert position, in bytes from the start of WAL. */
  async walInsertPosition(): Promise<bigint> {
    const [row] = await this.query<{ at: string }>(`SELECT (pg_current_wal_insert_lsn() - '0/0')::text AS at`);
    return BigInt(row!.at);
  }

  /** Jobs in the id range [first, last] that are not completed yet. */
  async notCompleted(first: string, last: string): Promise<number> {
    const [row] = await this.query<{ left: number }>(
      `SELECT count(*)::int AS left FROM awa.jobs WHERE id BETWEEN $1::bigint AND $2::bigint AND state <> 'completed'`,
      [first, last],
    );
    return row!.left;
  }
}
