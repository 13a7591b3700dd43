import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { useAppPerTest } from '../support/block-app.js';
import { dedicatedBackends, expectReopenedAfterLoss } from '../support/dedicated-connections.js';
import { queryOnce } from '../support/test-database.js';
import { waitFor } from '../support/test-app.js';

@Injectable()
class Counter {
  handled = 0;

  @JobHandler('written.plain')
  plain() {
    this.handled++;
  }
}

/**
 * The instance's lease connection (LeaseConnection): the LeaseWriter's batched writes go through a
 * connection of its own (application_name `awa-leases`, JIT off), in direct mode only.
 */
describe('the lease connection', () => {
  const apps = useAppPerTest();
  const leaseBackends = () => dedicatedBackends(apps.db.url, 'awa-leases');
  const completed = async (ids: string[]) =>
    (
      await queryOnce<{ n: number }>(
        apps.db.url,
        `SELECT count(*)::int AS n FROM awa.all_jobs WHERE id = ANY($1::bigint[]) AND state = 'completed'`,
        [ids],
      )
    )[0]!.n;

  /** Enqueues `n` jobs, waits until they are handled and stored completed, and returns their ids. */
  async function runJobs(app: TestingModule, n: number): Promise<string[]> {
    const counter = app.get(Counter);
    const before = counter.handled;
    const jobs = await app
      .get(QueueProducer)
      .enqueueMany(Array.from({ length: n }, (_, i) => ({ kind: 'written.plain', args: { i } })));
    const ids = jobs.map((j) => j.id);
    await waitFor(() => counter.handled >= before + n, 15_000, `${n} more jobs handled`);
    await waitFor(async () => (await completed(ids)) === n, 15_000, `${n} more jobs stored completed`);
    return ids;
  }

  it('writes the completions on a connection of its own, and closes it with the app', async () => {
    const app = await apps.start({ providers: [Counter] });
    // The first write opens it (and goes through the pool); the later ones use it.
    await runJobs(app, 3);
    await waitFor(async () => (await leaseBackends()).length === 1, 15_000, 'the lease connection');
    await runJobs(app, 3);
    await waitFor(
      async () => (await leaseBackends()).some((b) => b.query.includes('awa.active_leases')),
      15_000,
      'a completion on the lease connection',
    );
    // One connection, whatever the number of writes (its settings: test/sql/session.sql.spec.ts).
    expect(await leaseBackends()).toHaveLength(1);
    await app.close();
    await waitFor(async () => (await leaseBackends()).length === 0, 15_000, 'the lease connection to end');
  });

  it('is opened again after its connection is lost, and no result is lost meanwhile', async () => {
    const app = await apps.start({ providers: [Counter] });
    await runJobs(app, 2);
    // Results go through the pool until it is back (runJobs waits for every job stored completed).
    await expectReopenedAfterLoss(apps.db.url, 'awa-leases', 'awa.active_leases', (n) => runJobs(app, n));
  });

  it('is not used behind a transaction pooler', async () => {
    const pooled = await apps.start({
      providers: [Counter],
      awa: { connectionMode: 'transaction-pooler', livenessProbe: 'heartbeat' },
    });
    await runJobs(pooled, 5);
    await runJobs(pooled, 5);
    expect(await leaseBackends()).toEqual([]);
  });
});
