import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import { JobEventGroups, OnJobEvent, QueueProducer, type AwaModuleOptions, type JobEvent } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { queryOnce } from '../support/test-database.js';
import { waitFor } from '../support/test-app.js';
import { finishedJob } from '../support/job-waits.js';
import { OrderHandler, useEventApps } from './event-apps.fixture.js';

/** What the billing groups of every app saw, in order: the test reads and resets it. */
const seen: Array<{ app: string; jobId: string; event: string; state: string }> = [];
/** Job ids whose next deliveries throw, and how many times. */
const failuresLeft = new Map<string, number>();
let inFlight = 0;
let maxInFlight = 0;

@Injectable()
class Billing {
  readonly id = randomUUID();

  @OnJobEvent(['completed', 'failed'], { group: 'billing', kinds: ['order.*'] })
  async bill(event: JobEvent) {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await new Promise((resolve) => setImmediate(resolve));
      const left = failuresLeft.get(event.jobId) ?? 0;
      seen.push({ app: this.id, jobId: event.jobId, event: event.event, state: event.state });
      if (left > 0) {
        failuresLeft.set(event.jobId, left - 1);
        throw new Error(`billing is down (${left})`);
      }
    } finally {
      inFlight--;
    }
  }
}

const EVENTS_OPTIONS: AwaModuleOptions = {
  jobEvents: { pollInterval: 50, leaseDuration: 5_000, retryBaseDelay: 50, retryMaxDelay: 100 },
};

/** @OnJobEvent groups on running apps: delivery, acknowledgement, retry, takeover, catch-up and replay. */
describe('durable job events', () => {
  const db = useEventApps(EVENTS_OPTIONS, [OrderHandler, Billing]);
  const { boot, close } = db;

  beforeEach(() => {
    seen.length = 0;
    failuresLeft.clear();
    inFlight = maxInFlight = 0;
  });
  const enqueue = async (app: TestingModule, n = 1) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await app.get(QueueProducer).enqueue('order.place', { i })).id);
    return ids;
  };
  /**
   * Enqueues `n` jobs, each once the one before has completed: their completion events are then in
   * this order. (Jobs enqueued together run concurrently and may complete in any order.)
   */
  const enqueueInOrder = async (app: TestingModule, n = 1) => {
    const producer = app.get(QueueProducer);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const { id } = await producer.enqueue('order.place', { i });
      await finishedJob(producer, id);
      ids.push(id);
    }
    return ids;
  };
  const seenIds = () => seen.map((s) => s.jobId);
  const waitSeen = (ids: string[], what: string) =>
    waitFor(() => ids.every((id) => seenIds().includes(id)), 15_000, what);

  it('a group receives each subscribed completion, and acknowledges it', async () => {
    const app = await boot();
    const ids = await enqueue(app, 3);
    await waitSeen(ids, 'the three completions');
    expect(seen.map((s) => [s.event, s.state])).toEqual(ids.map(() => ['completed', 'completed']));
    const [billing] = await waitFor(async () => {
      const groups = await app.get(JobEventGroups).groups();
      return groups[0]?.lagEvents === 0 ? groups : undefined;
    });
    expect(billing).toMatchObject({ group: 'billing', failures: 0, lastError: null, lagEvents: 0 });
  });

  it('a handler that throws gets the same event again after a backoff, and the group waits for it', async () => {
    const app = await boot();
    const [first] = await enqueue(app);
    failuresLeft.set(first!, 2);
    await finishedJob(app.get(QueueProducer), first!);
    const [second] = await enqueue(app);
    await waitSeen([second!], 'the second completion');
    expect(seenIds()).toEqual([first, first, first, second]);
    expect(new Set(seen.map((s) => s.app)).size).toBe(1);
  });

  it('an event whose handler keeps throwing holds its group until it is skipped', async () => {
    const app = await boot();
    const [poison] = await enqueue(app);
    failuresLeft.set(poison!, Number.POSITIVE_INFINITY);
    await finishedJob(app.get(QueueProducer), poison!);
    const [next] = await enqueueInOrder(app);
    const groups = app.get(JobEventGroups);
    const [held] = await waitFor(async () => {
      const states = await groups.groups();
      return states[0] && states[0].failures >= 2 ? states : undefined;
    });
    expect(held).toMatchObject({
      group: 'billing',
      lagEvents: 2,
      lastError: expect.stringContaining('billing is down'),
    });
    expect(seenIds()).not.toContain(next);
    expect(await groups.skip('billing')).toEqual(expect.any(String));
    await waitSeen([next!], 'the event after the skipped one');
    expect(seenIds().filter((id) => id !== poison)).toEqual([next]);
  });

  it('two instances of a group never both handle one event: the other takes over when the holder stops', async () => {
    const a = await boot();
    const b = await boot();
    const early = await enqueue(a, 10);
    await waitSeen(early, 'the first ten');
    const holder = a.get(Billing).id === seen[0]!.app ? a : b;
    const other = holder === a ? b : a;
    // While both run, the one holding the lease delivers every event.
    expect(new Set(seen.map((s) => s.app))).toEqual(new Set([holder.get(Billing).id]));
    await close(holder);
    const late = await enqueue(other, 10);
    await waitSeen(late, 'the last ten');
    expect(seen.slice(early.length).every((s) => s.app === other.get(Billing).id)).toBe(true);
    expect(seenIds()).toHaveLength(early.length + late.length);
    expect(new Set(seenIds())).toEqual(new Set([...early, ...late]));
    expect(maxInFlight).toBe(1);
  });

  it('a group whose holder died is taken over once its lease ran out', async () => {
    // As a crashed instance leaves it: the group held, its lease running out in a second, never renewed.
    await queryOnce(
      db.url,
      `INSERT INTO awa.event_group_positions ("group", position_tx, holder, lease_until)
       VALUES ('billing', pg_snapshot_xmin(pg_current_snapshot()), 'crashed', now() + interval '1 second')`,
    );
    const app = await boot();
    const ids = await enqueueInOrder(app, 2);
    await waitSeen(ids, 'the completions, after the takeover');
    const [billing] = await app.get(JobEventGroups).groups();
    expect(billing!.holder).not.toBe('crashed');
    expect(seenIds()).toEqual(ids);
  });

  it('a group that was down catches up from its position', async () => {
    const app = await boot();
    const [before] = await enqueue(app);
    await waitSeen([before!], 'the first completion');
    await close(app);
    const worker = await boot([OrderHandler]);
    const whileDown = await enqueueInOrder(worker, 3);
    await waitFor(
      async () => (await queryOnce<{ n: number }>(db.url, 'SELECT count(*)::int AS n FROM awa.job_events'))[0]!.n === 4,
      15_000,
      'the events written while the group was down',
    );
    expect(seen).toHaveLength(1);
    await boot();
    await waitSeen(whileDown, 'the catch-up');
    expect(seenIds()).toEqual([before, ...whileDown]);
  });

  it('a group is replayed from a point in time', async () => {
    const app = await boot();
    // In order: the events come in the order of their jobs' completions.
    const old = await enqueueInOrder(app, 2);
    await waitSeen(old, 'the first two');
    await queryOnce(db.url, `UPDATE awa.job_events SET at = now() - interval '1 hour'`);
    const recent = await enqueueInOrder(app, 2);
    await waitSeen(recent, 'the last two');

    const replay = await app.get(JobEventGroups).replay('billing', new Date(Date.now() - 60_000));
    expect(replay.replayed).toBe(true);
    await waitFor(() => seen.length === 6, 15_000, 'the replayed events');
    expect(seenIds()).toEqual([...old, ...recent, ...recent]);
    expect(await app.get(JobEventGroups).replay('nobody', new Date())).toEqual({
      replayed: false,
      firstEventAt: null,
    });
  });

  it('an app without groups writes no event', async () => {
    const app = await boot([OrderHandler]);
    const ids = await enqueue(app, 3);
    const ds = app.get(DataSource);
    await waitFor(
      async () =>
        (await ds.query(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE state = 'completed'`))[0].n === ids.length,
    );
    expect(await ds.query('SELECT count(*)::int AS n FROM awa.job_events')).toEqual([{ n: 0 }]);
  });
});
