import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { AdminValidationError, JobHandler, QueueAdmin, QueueProducer } from 'nestjs-awa';
import { caught } from '../support/caught.js';
import { DataSource } from 'typeorm';
import { seedJob, seedRunning, type Exec } from '../support/job-factory.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';
import { truncateLive } from '../support/truncate-live.js';

@Injectable()
class ReportHandler {
  /** Its worker claims only this kind, which no test here enqueues. */
  @JobHandler('report.render', { queue: 'reports' }) render() {}
}

/** QueueAdmin on one instance: pause state, listing, counting, and one job or many at a time. */
describe('QueueAdmin', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let admin: QueueAdmin;
  let exec: Exec;
  const job = async (id: string) =>
    (await exec('SELECT *, id::text AS id FROM awa.all_jobs WHERE id = $1::bigint', [id]))[0] as
      Record<string, unknown> | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [ReportHandler],
      awa: { queues: { default: {}, reports: {} } },
    });
    admin = app.get(QueueAdmin);
    const dataSource = app.get(DataSource);
    exec = (text, values) => dataSource.query(text, values);
  });
  beforeEach(async () => {
    await truncateLive(exec, 'awa.jobs, awa.job_history, awa.active_leases, awa.queues');
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  describe('pause and resume', () => {
    it('persists a pause in awa.queues and reports it in queueStates until resumed', async () => {
      await admin.pauseQueue('emails');
      const [row] = await exec('SELECT paused_at FROM awa.queues WHERE name = $1', ['emails']);
      expect(row.paused_at).toBeInstanceOf(Date);
      let emails = (await admin.queueStates()).find((q) => q.name === 'emails');
      expect(emails).toMatchObject({ paused: true, pausedAt: row.paused_at });

      await admin.pauseQueue('emails'); // a second pause keeps the first time
      emails = (await admin.queueStates()).find((q) => q.name === 'emails');
      expect(emails?.pausedAt).toEqual(row.paused_at);

      await admin.resumeQueue('emails');
      emails = (await admin.queueStates()).find((q) => q.name === 'emails');
      expect(emails).toMatchObject({ paused: false, pausedAt: null });
    });

    it('lists every queue with jobs, with a pause row, or with a handler here, with counts per state', async () => {
      await seedJob(exec, { queue: 'default', state: 'available', runAtMs: -60_000 });
      await seedJob(exec, { queue: 'default', state: 'available' });
      await seedJob(exec, { queue: 'default', state: 'failed', finalizedAtMs: 0 });
      await seedJob(exec, { queue: 'bulk', state: 'completed', finalizedAtMs: 0 });
      await admin.pauseQueue('idle');
      const states = await admin.queueStates();
      expect(states.map((q) => q.name)).toEqual(['bulk', 'default', 'idle', 'reports']);
      const byName = new Map(states.map((q) => [q.name, q]));
      expect(byName.get('default')?.counts).toEqual({
        scheduled: 0,
        available: 2,
        running: 0,
        retryable: 0,
        completed: 0,
        failed: 1,
        cancelled: 0,
        waiting: 0,
      });
      const [oldest] = await exec(`SELECT min(run_at) AS at FROM awa.all_jobs WHERE state = 'available'`);
      expect(byName.get('default')?.oldestAvailableAt).toEqual(oldest.at);
      expect(byName.get('bulk')).toMatchObject({ paused: false, oldestAvailableAt: null });
      expect(byName.get('bulk')?.counts.completed).toBe(1);
      expect(byName.get('idle')).toMatchObject({ paused: true });
      expect(Object.values(byName.get('reports')!.counts).every((n) => n === 0)).toBe(true);
    });

    it('still lets jobs be enqueued into a paused queue', async () => {
      await admin.pauseQueue('default');
      const { id } = await app.get(QueueProducer).enqueue('nobody.handles', { a: 1 });
      expect((await admin.getJob(id))?.state).toBe('available');
    });
  });

  describe('listJobs and countJobs', () => {
    it('pages newest first by keyset until next is null', async () => {
      const ids: string[] = [];
      // Past 10, so that ids in text order would not be in number order.
      for (let i = 0; i < 12; i++) ids.push(await seedJob(exec, { kind: `k${i}` }));
      const seen: string[] = [];
      let after: string | undefined;
      let pages = 0;
      do {
        const page = await admin.listJobs({}, { limit: 5, ...(after ? { after } : {}) });
        seen.push(...page.jobs.map((j) => j.id));
        after = page.next ?? undefined;
        pages++;
      } while (after);
      expect(pages).toBe(3);
      expect(seen).toEqual([...ids].reverse());
      expect((await admin.listJobs({}, { limit: 5 })).next).toBe(ids[7]);
    });

    it('a page is not shifted by jobs enqueued after its cursor was taken', async () => {
      for (let i = 0; i < 4; i++) await seedJob(exec);
      const first = await admin.listJobs({}, { limit: 2 });
      await seedJob(exec);
      const second = await admin.listJobs({}, { limit: 2, after: first.next! });
      expect(second.jobs.map((j) => j.id)).toEqual(['2', '1']);
      expect(second.next).toBeNull();
    });

    it('filters by ids, state, queue, kind, tags, args, search and dates (all must match)', async () => {
      const a = await seedJob(exec, { kind: 'mail.send', queue: 'emails', args: { to: 'Ada@Example.com', n: 1 } });
      const b = await seedJob(exec, { kind: 'mail.send', queue: 'emails', state: 'failed', finalizedAtMs: -1_000 });
      const c = await seedJob(exec, { kind: 'report.build', queue: 'reports', args: { to: 'bob', n: 1 } });
      await exec(`UPDATE awa.jobs SET tags = '{vip,eu}' WHERE id = $1`, [a]);
      await exec(`UPDATE awa.jobs SET tags = '{eu}' WHERE id = $1`, [c]);
      await exec(`UPDATE awa.jobs SET created_at = now() - interval '1 day' WHERE id = $1`, [c]);
      const ids = async (filter: Parameters<QueueAdmin['listJobs']>[0]) =>
        (await admin.listJobs(filter)).jobs.map((j) => j.id);

      expect(await ids({ ids: [a, c] })).toEqual([c, a]);
      expect(await ids({ states: ['failed'] })).toEqual([b]);
      expect(await ids({ states: ['available', 'failed'], queues: ['emails'] })).toEqual([b, a]);
      expect(await ids({ kinds: ['report.build'] })).toEqual([c]);
      expect(await ids({ tags: ['eu'] })).toEqual([c, a]);
      expect(await ids({ tags: ['eu', 'vip'] })).toEqual([a]);
      expect(await ids({ args: { n: 1 } })).toEqual([c, a]);
      expect(await ids({ args: { to: 'bob' } })).toEqual([c]);
      expect(await ids({ search: 'ada@example' })).toEqual([a]);
      expect(await ids({ search: 'REPORT' })).toEqual([c]);
      expect(await ids({ search: '%' })).toEqual([]); // a wildcard is matched as itself
      expect(await ids({ createdBefore: new Date(Date.now() - 3_600_000) })).toEqual([c]);
      expect(await ids({ createdAfter: new Date(Date.now() - 3_600_000) })).toEqual([b, a]);
      expect(await ids({ finalizedBefore: new Date(Date.now() + 3_600_000) })).toEqual([b]);
      expect(await ids({ finalizedAfter: new Date(Date.now() + 3_600_000) })).toEqual([]);
      expect(await ids({ states: [] })).toEqual([]);
      expect(await admin.countJobs({ queues: ['emails'] })).toBe(2);
      expect(await admin.countJobs({})).toBe(3);
    });
  });

  describe('one job', () => {
    it('retryJob puts a failed job back to available with a fresh attempt budget, keeping its errors', async () => {
      const id = await seedJob(exec, { state: 'failed', attempt: 3, maxAttempts: 3, finalizedAtMs: -5_000 });
      await exec(
        `UPDATE awa.jobs SET errors = '[{"at":"x","attempt":3,"error":"boom"}]', snoozes = 2,
           progress = '{"p":1}', output = '"out"', run_at = now() - interval '1 hour' WHERE id = $1`,
        [id],
      );
      expect(await admin.retryJob(id)).toEqual({ outcome: 'retried' });
      const row = await job(id);
      expect(row).toMatchObject({
        state: 'available',
        attempt: 0,
        max_attempts: 3,
        finalized_at: null,
        snoozes: 0,
        progress: null,
        output: null,
        errors: [{ at: 'x', attempt: 3, error: 'boom' }],
      });
      expect((row!.run_at as Date).getTime()).toBeGreaterThan(Date.now() - 60_000);
    });

    it.each(['completed', 'cancelled'])('retryJob retries a %s job', async (state) => {
      const id = await seedJob(exec, { state, finalizedAtMs: 0 });
      expect(await admin.retryJob(id)).toEqual({ outcome: 'retried' });
      expect((await job(id))?.state).toBe('available');
    });

    it.each(['available', 'scheduled', 'retryable'])('retryJob leaves a %s job as it is', async (state) => {
      // Due in an hour: the live app's promotion sweep must not make a scheduled job available meanwhile.
      const id = await seedJob(exec, { state, runAtMs: 3_600_000 });
      expect(await admin.retryJob(id)).toEqual({ outcome: 'not-retryable', state });
    });

    it('retryJob leaves a running job as it is, and reports unknown ids as not found', async () => {
      const { id } = await seedRunning(exec);
      expect(await admin.retryJob(id)).toEqual({ outcome: 'not-retryable', state: 'running' });
      expect(await admin.retryJob('999999')).toEqual({ outcome: 'not-found' });
      expect(await admin.retryJob('not-an-id')).toEqual({ outcome: 'not-found' });
    });

    it('retryJob of a unique job whose key another job holds reports the holder and changes nothing', async () => {
      const holder = await seedJob(exec, { state: 'available' });
      const old = await seedJob(exec, { state: 'failed', finalizedAtMs: 0 });
      await exec(
        `UPDATE awa.jobs SET unique_key = 'k1', unique_states = '{scheduled,available,running,retryable}'
          WHERE id IN ($1, $2)`,
        [holder, old],
      );
      expect(await admin.retryJob(old)).toEqual({ outcome: 'duplicate', existingId: holder });
      expect((await job(old))?.state).toBe('failed');
    });

    it('deleteJob deletes a job that is not running, refuses a running one', async () => {
      const done = await seedJob(exec, { state: 'completed', finalizedAtMs: 0 });
      const { id: running } = await seedRunning(exec);
      expect(await admin.deleteJob(done)).toEqual({ outcome: 'deleted' });
      expect(await job(done)).toBeUndefined();
      expect(await admin.deleteJob(running)).toEqual({ outcome: 'running' });
      expect((await job(running))?.state).toBe('running');
      expect(await admin.deleteJob(done)).toEqual({ outcome: 'not-found' });
    });

    it('cancelJob cancels a waiting job and signals a running one, as the producer does', async () => {
      const waiting = await seedJob(exec, { state: 'available' });
      const { id: running } = await seedRunning(exec);
      expect(await admin.cancelJob(waiting)).toEqual({ outcome: 'cancelled', previousState: 'available' });
      expect(await admin.cancelJob(running)).toEqual({ outcome: 'signalled', previousState: 'running' });
      expect((await admin.getJob(waiting))?.state).toBe('cancelled');
    });
  });

  describe('input checks', () => {
    const bad: Array<[string, () => Promise<unknown>, string]> = [
      ['an empty queue name to pause', () => admin.pauseQueue(''), 'name'],
      ['a queue name longer than 100 characters', () => admin.resumeQueue('q'.repeat(101)), 'name'],
      ['a page limit of 0', () => admin.listJobs({}, { limit: 0 }), 'page.limit'],
      ['a page limit over 500', () => admin.listJobs({}, { limit: 501 }), 'page.limit'],
      ['a page limit that is not an integer', () => admin.listJobs({}, { limit: 1.5 }), 'page.limit'],
      ['a cursor that is not a job id', () => admin.listJobs({}, { after: 'x' }), 'page.after'],
      ['an unknown page key', () => admin.listJobs({}, { afterId: '1' } as never), 'page.afterId'],
      ['a bad state in a bulk retry', () => admin.retryJobs({ states: ['done' as never] }), 'filter.states[0]'],
      ['a bad date in a bulk delete', () => admin.deleteJobs({ createdBefore: new Date(NaN) }), 'filter.createdBefore'],
      ['args that are not an object in a count', () => admin.countJobs({ args: 'x' as never }), 'filter.args'],
    ];
    it.each(bad)('refuses %s with an AdminValidationError naming the field', async (_what, call, field) => {
      const id = await seedJob(exec, { state: 'failed', finalizedAtMs: 0 });
      const error = await caught(call);
      expect(error).toBeInstanceOf(AdminValidationError);
      expect(error).toMatchObject({ field });
      expect((await job(id))?.state).toBe('failed');
    });
  });

  describe('many jobs by filter', () => {
    it('retryJobs retries the finished jobs that match, and no others', async () => {
      const failed = await seedJob(exec, { queue: 'emails', state: 'failed', finalizedAtMs: 0 });
      const cancelled = await seedJob(exec, { queue: 'emails', state: 'cancelled', finalizedAtMs: 0 });
      const otherQueue = await seedJob(exec, { queue: 'other', state: 'failed', finalizedAtMs: 0 });
      const { id: running } = await seedRunning(exec, { queue: 'emails' });
      const result = await admin.retryJobs({ queues: ['emails'] });
      expect(result).toEqual({ count: 2, batches: 1 });
      expect((await job(failed))?.state).toBe('available');
      expect((await job(cancelled))?.state).toBe('available');
      expect((await job(otherQueue))?.state).toBe('failed');
      expect((await job(running))?.state).toBe('running');
    });

    it('retryJobs retries a unique job whose key is free and skips one whose key is held', async () => {
      const holder = await seedJob(exec, { state: 'available' });
      const blocked = await seedJob(exec, { state: 'failed', finalizedAtMs: 0 });
      const free = await seedJob(exec, { state: 'failed', finalizedAtMs: 0 });
      const states = '{scheduled,available,running,retryable}';
      await exec(`UPDATE awa.jobs SET unique_key = 'held', unique_states = $2 WHERE id IN ($1, $3)`, [
        holder,
        states,
        blocked,
      ]);
      await exec(`UPDATE awa.jobs SET unique_key = 'free', unique_states = $2 WHERE id = $1`, [free, states]);
      expect(await admin.retryJobs({ states: ['failed'] })).toEqual({ count: 1, batches: 1 });
      expect((await job(blocked))?.state).toBe('failed');
      expect((await job(free))?.state).toBe('available');
    });

    it('cancelJobs cancels waiting jobs and puts a cancel request on running ones, counting both', async () => {
      const waiting = await seedJob(exec, { state: 'scheduled', runAtMs: 60_000 });
      const { id: running } = await seedRunning(exec);
      const done = await seedJob(exec, { state: 'completed', finalizedAtMs: 0 });
      expect(await admin.cancelJobs({})).toEqual({ count: 2, batches: 1 });
      expect((await job(waiting))?.state).toBe('cancelled');
      expect((await job(running))?.state).toBe('running');
      const [lease] = await exec('SELECT cancel_requested FROM awa.active_leases WHERE job_id = $1', [running]);
      expect(lease.cancel_requested).toBe(true);
      expect((await job(done))?.state).toBe('completed');
    });

    it('deleteJobs deletes what is not running and cancels what is', async () => {
      const done = await seedJob(exec, { state: 'completed', finalizedAtMs: 0 });
      const waiting = await seedJob(exec, { state: 'available' });
      const { id: running } = await seedRunning(exec);
      expect(await admin.deleteJobs({})).toEqual({ deleted: 2, cancelled: 1, batches: 1 });
      expect(await job(done)).toBeUndefined();
      expect(await job(waiting)).toBeUndefined();
      expect((await job(running))?.state).toBe('running');
      const [lease] = await exec('SELECT cancel_requested FROM awa.active_leases WHERE job_id = $1', [running]);
      expect(lease.cancel_requested).toBe(true);
    });
  });
});
