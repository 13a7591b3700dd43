import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { JobEventGroups, OnJobEvent, QueueProducer, type JobEvent } from 'nestjs-awa';
import { queryOnce } from '../support/test-database.js';
import { waitFor } from '../support/test-app.js';
import { finishedJob } from '../support/job-waits.js';
import { waitForLockWait } from '../support/lock-waits.js';
import { OrderHandler, useEventApps } from './event-apps.fixture.js';

/** Every delivery of the `audit` group, by app, in order. */
const seen: Array<{ app: string; jobId: string }> = [];
/** While set, the audit handler waits on it (a handler that runs long). */
let gate: Promise<void> | undefined;

@Injectable()
class Audit {
  readonly id = randomUUID();

  @OnJobEvent(['completed'], { group: 'audit' })
  async audit(event: JobEvent) {
    seen.push({ app: this.id, jobId: event.jobId });
    await gate;
  }
}

/** A short lease, so that a holder loses it in test time; renewed every LEASE_MS / 3 while a handler runs. */
const LEASE_MS = 900;
const OPTIONS = { jobEvents: { pollInterval: 50, leaseDuration: LEASE_MS, retryBaseDelay: 50, retryMaxDelay: 100 } };
/** Text of the group's read (readGroupEvents) only. */
const GROUP_READ = 'AS matched';

/**
 * The lease of a durable-event group where it meets a slow database and the admin API: an instance
 * hands an event to its handler only while it holds the group, and a renewal never takes back a group
 * that a replay or another instance took from it.
 */
describe('durable job events: the group lease', () => {
  const apps = useEventApps(OPTIONS, [OrderHandler, Audit]);
  const holder = async () =>
    (
      await queryOnce<{ holder: string | null }>(
        apps.url,
        `SELECT holder FROM awa.event_group_positions WHERE "group" = 'audit'`,
      )
    )[0]?.holder;

  beforeEach(() => {
    seen.length = 0;
    gate = undefined;
  });

  it('a holder whose read outlasted its lease hands nothing to its handler: the event comes once, from the new holder', async () => {
    const a = await apps.boot();
    const first = await waitFor(holder);
    // A transaction older than the event keeps it unsettled (no group may read it yet), and its lock on
    // awa.job_events stops the holder's next read after its claim: a read slower than the lease.
    const blocker = new pg.Client({ connectionString: apps.url });
    await blocker.connect();
    const exec = (text: string, values?: unknown[]) => queryOnce(apps.url, text, values);
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT pg_current_xact_id()');
      const { id } = await a.get(QueueProducer).enqueue('order.place', {});
      await finishedJob(a.get(QueueProducer), id);
      await blocker.query('LOCK TABLE awa.job_events IN ACCESS EXCLUSIVE MODE');
      await waitForLockWait(exec, { statement: GROUP_READ }, "the holder's read, blocked");
      // The lease runs out meanwhile; a second instance takes the group over, and its read waits too.
      const b = await apps.boot();
      await waitFor(async () => (await holder()) !== first, 15_000, 'the takeover');
      await waitForLockWait(exec, { statement: GROUP_READ, count: 2 }, "the new holder's read, blocked");
      await blocker.query('COMMIT');
      await waitFor(() => seen.length > 0, 15_000, 'a delivery');
      await waitFor(async () => (await a.get(JobEventGroups).groups())[0]?.lagEvents === 0, 15_000, 'the ack');
      expect(seen).toEqual([{ app: b.get(Audit).id, jobId: id }]);
    } finally {
      await blocker.end();
    }
  });

  it('a replay while a handler runs is kept: the renewal does not take the group back, and the ack after it is refused', async () => {
    const app = await apps.boot();
    const producer = app.get(QueueProducer);
    const first = (await producer.enqueue('order.place', { i: 1 })).id;
    await waitFor(() => seen.length === 1, 15_000, 'the first delivery');
    let release!: () => void;
    gate = new Promise((resolve) => (release = resolve));
    const second = (await producer.enqueue('order.place', { i: 2 })).id;
    await waitFor(() => seen.length === 2, 15_000, 'the second delivery, held');
    // Both events again, from the first on; the handler of the second still runs past a renewal.
    expect((await app.get(JobEventGroups).replay('audit', new Date(Date.now() - 60_000))).replayed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 2));
    gate = undefined;
    release();
    await waitFor(() => seen.length === 4, 15_000, 'the replayed events');
    expect(seen.map((s) => s.jobId)).toEqual([first, second, first, second]);
  });
});
