import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type AwaModuleOptions, type JobRecord } from 'nestjs-awa';
import { jest } from '@jest/globals';
import { AwaDatabase } from '../../lib/database/awa-database.js';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { useAppPerTest } from '../support/block-app.js';
import { dedicatedBackends, expectReopenedAfterLoss } from '../support/dedicated-connections.js';
import { handedOff } from '../support/handed-off.js';
import { finishedJob } from '../support/job-waits.js';
import { queryOnce } from '../support/test-database.js';
import { FAST_OPTIONS, waitFor } from '../support/test-app.js';

@Injectable()
class PingHandler {
  @JobHandler('handoff-connection.ping') ping() {}
}

/** Both instances with handoff on the default queue (the enqueue decides, the worker offers). */
const HANDOFF_ON: AwaModuleOptions = {
  ...FAST_OPTIONS,
  queues: { default: { ...FAST_OPTIONS.queues!.default, handoff: true } },
};

/**
 * The producer's handoff connection (HandoffConnection): the statement of an enqueue() that may hand
 * its job to an idle worker goes through a connection of the producer's own (application_name
 * `awa-handoffs`), in direct mode only, and the job is still handed and run.
 */
describe('the handoff connection', () => {
  const apps = useAppPerTest();
  const handoffBackends = () => dedicatedBackends(apps.db.url, 'awa-handoffs');

  /**
   * A worker instance and a producer-only instance, with `handoff` on the default queue of both (the
   * worker's own `workerHandoff` when given: two services' modules need not agree).
   */
  async function start(
    handoff: true | 'eager' = true,
    workerHandoff = handoff,
  ): Promise<{ producer: QueueProducer; workerId: string; apps: TestingModule[] }> {
    const awa = (h: true | 'eager'): AwaModuleOptions => ({
      ...HANDOFF_ON,
      queues: { default: { ...HANDOFF_ON.queues!.default, handoff: h } },
    });
    const worker = await apps.start({ providers: [PingHandler], awa: awa(workerHandoff) });
    const producerApp = await apps.start({ awa: awa(handoff) });
    return {
      producer: producerApp.get(QueueProducer),
      workerId: worker.get(InstanceSession, { strict: false }).id,
      apps: [producerApp, worker],
    };
  }

  /** Waits for the worker's offer, enqueues one job and waits for it to finish. */
  async function enqueueHanded(producer: QueueProducer, workerId: string): Promise<JobRecord> {
    await waitFor(
      async () =>
        (await queryOnce(apps.db.url, 'SELECT FROM awa.worker_offers WHERE instance_id = $1', [workerId])).length > 0,
      15_000,
      'the worker to offer',
    );
    return finishedJob(producer, (await producer.enqueue('handoff-connection.ping', {})).id);
  }

  /**
   * Opens the handoff connection (the first handed enqueue goes through the pool), hands three jobs
   * off through it, and returns the last statement it ran.
   */
  async function threeHandedThroughIt(handoff: true | 'eager', workerHandoff = handoff): Promise<string> {
    const { producer, workerId } = await start(handoff, workerHandoff);
    await enqueueHanded(producer, workerId);
    await waitFor(async () => (await handoffBackends()).length === 1, 15_000, 'the handoff connection');
    const jobs: JobRecord[] = [];
    for (let i = 0; i < 3; i++) jobs.push(await enqueueHanded(producer, workerId));
    expect(jobs.map((job) => job.state)).toEqual(['completed', 'completed', 'completed']);
    expect(await Promise.all(jobs.map((job) => handedOff(apps.db.url, job.id)))).toEqual([true, true, true]);
    const backends = await handoffBackends();
    expect(backends).toHaveLength(1);
    return backends[0]!.query;
  }

  it('hands jobs off through a connection of its own, one whatever the number of enqueues', async () => {
    expect(await threeHandedThroughIt(true)).toContain('awa.worker_offers');
  });

  it("handoff 'eager': each handed insert is followed by its flush on the same connection (pg's pipeline mode)", async () => {
    expect(await threeHandedThroughIt('eager')).toContain('awa.handoff_flush_due');
  });

  it("the producer's module decides: 'eager' there hands eagerly also to a worker whose module has true", async () => {
    expect(await threeHandedThroughIt('eager', true)).toContain('awa.handoff_flush_due');
  });

  it("the producer's module decides: true there hands durably also to a worker whose module has 'eager'", async () => {
    expect(await threeHandedThroughIt(true, 'eager')).toContain('awa.worker_offers');
  });

  it("handoff 'eager' without pg's pipeline mode (pg before 8.23): the handed insert commits durably on its own", async () => {
    // As an older pg builds it: the pipeline option is not known, so the client is an ordinary one.
    const create = AwaDatabase.prototype.createDedicatedClient;
    const spy = jest.spyOn(AwaDatabase.prototype, 'createDedicatedClient').mockImplementation(function (
      this: AwaDatabase,
      name: string,
      timeoutMs?: number,
    ) {
      return create.call(this, name, timeoutMs);
    });
    try {
      const { producer, workerId } = await start('eager');
      await enqueueHanded(producer, workerId);
      await waitFor(async () => (await handoffBackends()).length === 1, 15_000, 'the handoff connection');
      const job = await enqueueHanded(producer, workerId);
      expect(job.state).toBe('completed');
      expect(await handedOff(apps.db.url, job.id)).toBe(true);
      const [backend] = await handoffBackends();
      expect(backend!.query).toContain('awa.worker_offers');
      expect(backend!.query).not.toContain('handoff_flush_due');
    } finally {
      spy.mockRestore();
    }
  });

  it('is opened again after its connection is lost, and enqueues go on meanwhile', async () => {
    const { producer, workerId } = await start();
    await enqueueHanded(producer, workerId);
    await expectReopenedAfterLoss(apps.db.url, 'awa-handoffs', 'awa.worker_offers', async (n) => {
      for (let i = 0; i < n; i++) expect((await enqueueHanded(producer, workerId)).state).toBe('completed');
    });
  });

  it('is ended with its app', async () => {
    const started = await start();
    await enqueueHanded(started.producer, started.workerId);
    await waitFor(async () => (await handoffBackends()).length === 1, 15_000, 'the handoff connection');
    for (const app of started.apps) await app.close();
    await waitFor(async () => (await handoffBackends()).length === 0, 15_000, 'the handoff connection to end');
  });

  it('is not opened behind a transaction pooler, nor when the queue does not hand off', async () => {
    // Handoff is off by default behind a transaction pooler.
    const pooled = await apps.start({
      awa: { ...FAST_OPTIONS, queues: {}, connectionMode: 'transaction-pooler', livenessProbe: 'heartbeat' },
    });
    const off = await apps.start({ awa: { ...FAST_OPTIONS, queues: { default: { handoff: false } } } });
    const enqueued: string[] = [];
    for (const app of [pooled, off]) {
      for (let i = 0; i < 3; i++)
        enqueued.push((await app.get(QueueProducer).enqueue('handoff-connection.ping', { i })).id);
    }
    expect(enqueued).toHaveLength(6);
    expect(await handoffBackends()).toEqual([]);
  });
});
