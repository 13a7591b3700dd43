import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { DataSource } from 'typeorm';
import {
  JobHandler,
  QueueAdmin,
  QueueProducer,
  RescueErrors,
  type AwaModuleOptions,
  type Job,
  type JobRecord,
} from 'nestjs-awa';
import { AWA_HANDOFF_CHANNEL } from '../../lib/awa.constants.js';
import { InstanceSession } from '../../lib/instance/instance-session.js';
import { LIVENESS_LOCK_NAMESPACE } from '../../lib/sql/instances.sql.js';
import { handedOff as handedOffIn } from '../support/handed-off.js';
import { finishedJob } from '../support/job-waits.js';
import { createTestDatabase, queryOnce, withConnection, type TestDatabase } from '../support/test-database.js';
import { FAST_OPTIONS, startTestApp } from '../support/test-app.js';
import { useTestApp } from '../support/block-app.js';
import { waitFor } from '../support/wait-for.js';

const RESCUE_QUEUE = 'handoff-rescue';
/** One slot: a worker that runs one job is full. */
const ONE_SLOT_QUEUE = 'handoff-one';
const runsOf = new Map<string, number>();
/** Holds the one-slot queue's handler until the test lets it go. */
let releaseBlocked: () => void = () => undefined;
let blocked = new Promise<void>((resolve) => (releaseBlocked = resolve));

@Injectable()
class HandoffHandlers {
  @JobHandler('handoff.ping') ping() {}
  @JobHandler('handoff.rescued', { queue: RESCUE_QUEUE }) rescued() {}

  @JobHandler('handoff.block', { queue: ONE_SLOT_QUEUE }) block() {
    return blocked;
  }

  /** Counts its runs per job. */
  @JobHandler('handoff.counted') counted(job: Job) {
    runsOf.set(job.id, (runsOf.get(job.id) ?? 0) + 1);
  }

  /** Its write commits with its completion (job.transaction), fenced on the handed lease. */
  @JobHandler('handoff.effect') async effect(job: Job) {
    await job.transaction((manager) =>
      manager.query('INSERT INTO public.handoff_effects (job_id, attempt) VALUES ($1, $2)', [job.id, job.attempt]),
    );
  }
}

/** Both instances have the option on the default queue: the enqueue decides, the worker offers. */
const options = (rescueHandoff: boolean): AwaModuleOptions => ({
  ...FAST_OPTIONS,
  queues: {
    default: { ...FAST_OPTIONS.queues!.default, handoff: true },
    [RESCUE_QUEUE]: { pollInterval: 200, handoff: rescueHandoff },
    [ONE_SLOT_QUEUE]: { pollInterval: 200, concurrency: 1 },
  },
});

/** Queue option `handoff` (docs/handoff.md): an idle worker offers, and enqueue() inserts the job already its own. */
describe('handoff to an idle worker', () => {
  let db: TestDatabase;
  let worker: TestingModule;
  let producerApp: TestingModule;
  let producer: QueueProducer;
  let workerId: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    // The worker never offers for the rescue queue: only the dead instance of that test does.
    worker = await startTestApp({ url: db.url, providers: [HandoffHandlers], awa: options(false) });
    producerApp = await startTestApp({ url: db.url, awa: options(true) });
    producer = producerApp.get(QueueProducer);
    workerId = worker.get(InstanceSession, { strict: false }).id;
  });
  afterAll(async () => {
    await producerApp?.close();
    await worker?.close();
    await db?.drop();
  });

  const offersOf = async (instanceId: string) =>
    queryOnce<{ queue: string }>(db.url, 'SELECT queue FROM awa.worker_offers WHERE instance_id = $1', [instanceId]);
  const handedOff = (job: JobRecord) => handedOffIn(db.url, job.id);
  const offeredOn = async (instanceId: string, queue: string) =>
    (await offersOf(instanceId)).some((o) => o.queue === queue);
  const offered = () => waitFor(() => offeredOn(workerId, 'default'), 15_000, 'the worker to offer');

  it('an idle worker offers; a job enqueued on another instance is handed to it and runs, and the worker offers again', async () => {
    await offered();
    const job = await finishedJob(producer, (await producer.enqueue('handoff.ping', { n: 1 })).id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1 });
    expect(await handedOff(job)).toBe(true);
    await offered();
  });

  it("a handed job's job.transaction commits its write with the completion, once", async () => {
    await queryOnce(db.url, 'CREATE TABLE IF NOT EXISTS public.handoff_effects (job_id bigint, attempt int)');
    await offered();
    const job = await finishedJob(producer, (await producer.enqueue('handoff.effect', {})).id);
    expect(job.state).toBe('completed');
    expect(await handedOff(job)).toBe(true);
    expect(await queryOnce(db.url, 'SELECT job_id::text, attempt FROM public.handoff_effects')).toEqual([
      { job_id: job.id, attempt: 1 },
    ]);
  });

  it('a job with runAt, or enqueued in the caller’s transaction, is claimed as before', async () => {
    await offered();
    const scheduled = await producer.enqueue('handoff.ping', {}, { runAt: new Date() });
    const inTransaction = await producerApp
      .get(DataSource)
      .transaction((manager) => producer.enqueue('handoff.ping', {}, { manager }));
    for (const { id } of [scheduled, inTransaction]) {
      const job = await finishedJob(producer, id);
      expect(job.state).toBe('completed');
      expect(await handedOff(job)).toBe(false);
    }
  });

  it('a paused queue hands nothing: the job waits, available, until the queue is resumed', async () => {
    await offered();
    const admin = producerApp.get(QueueAdmin);
    await admin.pauseQueue('default');
    try {
      const { id } = await producer.enqueue('handoff.ping', {});
      expect(await producer.getJob(id)).toMatchObject({ state: 'available', attempt: 0 });
      await admin.resumeQueue('default');
      const job = await finishedJob(producer, id);
      expect(job.state).toBe('completed');
      expect(await handedOff(job)).toBe(false);
    } finally {
      await admin.resumeQueue('default');
    }
  });

  it('a job handed to an instance that died is not lost: maintenance rescues it and a live worker runs it', async () => {
    // An instance that is live while it takes the job: this session holds its liveness lock (as the
    // instance's own would), so maintenance cannot forget it, and its offer, before the enqueue.
    // Its session ends after the body: the instance dies, its lock with it.
    const id = await withConnection(db.url, async (session) => {
      await session.query('SELECT pg_advisory_lock($1, $2)', [LIVENESS_LOCK_NAMESPACE, 987654]);
      await queryOnce(
        db.url,
        `INSERT INTO awa.instances (id, hostname, pid, lock_key, heartbeat_at)
         VALUES ('handoff-dead', 'gone', 1, 987654, now())`,
      );
      await queryOnce(
        db.url,
        `INSERT INTO awa.worker_offers (queue, instance_id, kinds, deadline_ms) VALUES ($1, 'handoff-dead', $2, 0)`,
        [RESCUE_QUEUE, ['handoff.rescued']],
      );
      const { id: handed } = await producer.enqueue('handoff.rescued', {}, { queue: RESCUE_QUEUE });
      expect(await queryOnce(db.url, 'SELECT instance_id FROM awa.active_leases WHERE job_id = $1', [handed])).toEqual([
        { instance_id: 'handoff-dead' },
      ]);
      return handed;
    });
    const job = await finishedJob(producer, id);
    expect(job.state).toBe('completed');
    expect(job.attempt).toBe(2); // the handed attempt never ran; its rescue left it for the next
    expect(await offersOf('handoff-dead')).toEqual([]); // gone with the forgotten instance
  });

  it('a job handed to a worker whose slots filled since it offered goes back to available, its attempt not spent', async () => {
    await waitFor(() => offeredOn(workerId, ONE_SLOT_QUEUE), 15_000, 'the one-slot worker to offer');
    const first = await producer.enqueue('handoff.block', {}, { queue: ONE_SLOT_QUEUE });
    await waitFor(async () => (await producer.getJob(first.id))?.state === 'running', 15_000, 'the first job to run');
    // Its only slot is taken: it does not offer again. An offer left from before its slots filled:
    await queryOnce(
      db.url,
      `INSERT INTO awa.worker_offers (queue, instance_id, kinds, deadline_ms) VALUES ($1, $2, $3, 0)`,
      [ONE_SLOT_QUEUE, workerId, ['handoff.block']],
    );
    const second = await producer.enqueue('handoff.block', {}, { queue: ONE_SLOT_QUEUE });
    const givenBack = await waitFor(async () => {
      const job = await producer.getJob(second.id);
      return job?.state === 'available' && job.errors.length > 0 ? job : undefined;
    });
    expect(givenBack).toMatchObject({
      attempt: 0,
      errors: [expect.objectContaining({ error: RescueErrors.releasedHandoffBusy })],
    });
    releaseBlocked();
    for (const { id } of [first, second])
      expect(await finishedJob(producer, id)).toMatchObject({ state: 'completed', attempt: 1 });
    blocked = new Promise<void>((resolve) => (releaseBlocked = resolve));
  });

  it('a worker that shuts down withdraws its offer', async () => {
    const second = await startTestApp({ url: db.url, providers: [HandoffHandlers], awa: options(false) });
    const secondId = second.get(InstanceSession, { strict: false }).id;
    await waitFor(() => offeredOn(secondId, 'default'), 15_000, 'the second worker to offer');
    await second.close();
    expect(await offersOf(secondId)).toEqual([]);
  });
});

/** The one way a handoff's notification is lost: the worker's session is down when it is sent. */
describe('handoff: a notification sent while the session was down', () => {
  const block = useTestApp({
    providers: [HandoffHandlers],
    // Heartbeats as shipped: no stale-heartbeat rescue can take the job first in this test.
    awa: { ...options(false), heartbeatInterval: 30_000, heartbeatStaleAfter: 90_000 },
  });

  /** What insertHandedOff leaves, without its notification: running, leased here, attempted at its insert. */
  const seedHanded = async (instanceId: string, kind: string) => {
    const [seeded] = await queryOnce<{ id: string }>(
      block.db.url,
      `WITH j AS (
         INSERT INTO awa.jobs (kind, queue, args, state, attempt, run_lease, attempted_at)
         VALUES ($2, 'default', '{}', 'running', 1, 42, now()) RETURNING id, run_lease)
       INSERT INTO awa.active_leases (job_id, run_lease, instance_id)
       SELECT id, run_lease, $1 FROM j RETURNING job_id::text AS id`,
      [instanceId, kind],
    );
    return seeded!.id;
  };
  /** The handoff notification of a job seeded by seedHanded. */
  const notifyHanded = (instanceId: string, id: string, kind: string) =>
    queryOnce(block.db.url, `SELECT pg_notify('${AWA_HANDOFF_CHANNEL}', $1)`, [
      JSON.stringify({
        i: instanceId,
        q: 'default',
        r: [id, kind, {}, 1, 25, 0, '42', Date.now(), Date.now(), null, null],
      }),
    ]);
  const reconnect = (instanceId: string) =>
    queryOnce(block.db.url, 'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      `awa:${instanceId}`,
    ]);

  it('the job handed meanwhile runs on the instance once its session is back, in its handed attempt', async () => {
    const instanceId = block.app.get(InstanceSession, { strict: false }).id;
    const id = await seedHanded(instanceId, 'handoff.ping');
    await reconnect(instanceId);
    const job = await finishedJob(block.app.get(QueueProducer), id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
  });

  it('a handed job found after the reconnect and also notified runs once, whichever comes first', async () => {
    const instanceId = block.app.get(InstanceSession, { strict: false }).id;
    const producer = block.app.get(QueueProducer);
    const id = await seedHanded(instanceId, 'handoff.counted');
    await reconnect(instanceId);
    await finishedJob(producer, id); // found by the read after the reconnect, run, its lease gone
    await notifyHanded(instanceId, id, 'handoff.counted'); // its notification, late
    // Notifications come in order: once a later handed job has run, the late one was handled.
    const later = await seedHanded(instanceId, 'handoff.counted');
    await notifyHanded(instanceId, later, 'handoff.counted');
    await finishedJob(producer, later);
    expect([runsOf.get(id), runsOf.get(later)]).toEqual([1, 1]);
  });
});
