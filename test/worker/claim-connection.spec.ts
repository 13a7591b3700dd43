import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer } from 'nestjs-awa';
import { useAppPerTest } from '../support/block-app.js';
import { dedicatedBackends, expectReopenedAfterLoss } from '../support/dedicated-connections.js';
import { waitFor } from '../support/test-app.js';

@Injectable()
class Counter {
  handled = 0;

  @JobHandler('claimed.plain')
  plain() {
    this.handled++;
  }
}

/** The only handler of its app: a queue with flow control, and no plain one to claim. */
@Injectable()
class RatedCounter {
  handled = 0;

  @JobHandler('claimed.rated', { queue: 'rated' })
  rated() {
    this.handled++;
  }
}

/**
 * The instance's claim connection (ClaimConnection): plain claims go through a connection of its
 * own (application_name `awa-claims`), in direct mode only.
 */
describe('the claim connection', () => {
  const apps = useAppPerTest();
  const claimBackends = () => dedicatedBackends(apps.db.url, 'awa-claims');

  async function runJobs(app: TestingModule, n: number, kind = 'claimed.plain'): Promise<void> {
    const counter = kind === 'claimed.plain' ? app.get(Counter) : app.get(RatedCounter);
    const before = counter.handled;
    await app.get(QueueProducer).enqueueMany(Array.from({ length: n }, (_, i) => ({ kind, args: { i } })));
    await waitFor(() => counter.handled >= before + n, 15_000, `${n} more jobs handled`);
  }

  it('claims plain jobs on a connection of its own', async () => {
    const app = await apps.start({ providers: [Counter] });
    // The first claim opens it (and goes through the pool); the later ones use it.
    await runJobs(app, 3);
    await waitFor(async () => (await claimBackends()).length === 1, 15_000, 'the claim connection');
    await runJobs(app, 3);
    await waitFor(
      async () => (await claimBackends()).some((b) => b.query.includes('awa.jobs')),
      15_000,
      'a claim on the claim connection',
    );
    // One connection, whatever the number of claims (its settings: test/sql/session.sql.spec.ts).
    expect(await claimBackends()).toHaveLength(1);
  });

  it('is opened again after its connection is lost, and claims go on meanwhile', async () => {
    const app = await apps.start({ providers: [Counter] });
    await runJobs(app, 2);
    // Claims go through the pool until it is back; then through the new one.
    await expectReopenedAfterLoss(apps.db.url, 'awa-claims', 'awa.jobs', (n) => runJobs(app, n));
  });

  it('is not used behind a transaction pooler, nor for a rate-limited queue', async () => {
    const pooled = await apps.start({
      providers: [Counter],
      awa: { connectionMode: 'transaction-pooler', livenessProbe: 'heartbeat' },
    });
    await runJobs(pooled, 5);
    await runJobs(pooled, 5);
    expect(await claimBackends()).toEqual([]);
    await pooled.close();

    const rated = await apps.start({
      providers: [RatedCounter],
      awa: { queues: { rated: { rateLimit: { limit: 1_000, period: 1_000 } } } },
    });
    await runJobs(rated, 5, 'claimed.rated');
    await runJobs(rated, 5, 'claimed.rated');
    expect(await claimBackends()).toEqual([]);
  });
});
