import pg from 'pg';
import { queryOnce } from '../support/test-database.js';
import { waitFor } from '../support/wait-for.js';

/**
 * Proves that workers tried to claim: every claim reads the pause from awa.queues, so while this
 * holds an exclusive lock on that table, a claim that begins queues up behind it. Each round takes
 * the lock and waits for a claim to wait. A claim that waited began after the lock was taken (so
 * after whatever the test did before); a second round's claim means the first one has finished,
 * since a worker claims one batch at a time.
 */
export class ClaimObserver {
  private constructor(
    private readonly url: string,
    private readonly client: pg.Client,
  ) {}

  static async connect(url: string): Promise<ClaimObserver> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    return new ClaimObserver(url, client);
  }

  async claimsAttempted(rounds = 2): Promise<void> {
    for (let round = 0; round < rounds; round++) {
      await this.client.query('BEGIN');
      try {
        await this.client.query('LOCK TABLE awa.queues IN ACCESS EXCLUSIVE MODE');
        await waitFor(
          async () =>
            (
              await queryOnce<{ n: number }>(
                this.url,
                `SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'awa.queues'::regclass AND NOT granted`,
              )
            )[0]!.n > 0,
          15_000,
          'a claim waiting for awa.queues',
        );
      } finally {
        await this.client.query('ROLLBACK');
      }
    }
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}
