import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type EnqueueOptions, type Job } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { createStatementGate } from '../support/statement-gate.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

/** Holds its jobs running until the test releases them. */
@Injectable()
class BlockingHandler {
  static release: () => void = () => undefined;
  static started: string[] = [];
  @JobHandler('u.block')
  async block(job: Job) {
    BlockingHandler.started.push(job.id);
    await new Promise<void>((resolve) => (BlockingHandler.release = resolve));
  }
}

const HOUR = 3_600_000;

/** Unique jobs: a duplicate resolves to the job that holds its key, decided by the unique index. */
describe('QueueProducer unique jobs', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  let dataSource: DataSource;
  const countKind = async (kind: string) =>
    Number((await dataSource.query('SELECT count(*) AS n FROM awa.all_jobs WHERE kind = $1', [kind]))[0].n);
  const unique = (kind: string, args: unknown, options: EnqueueOptions['unique'] = {}, rest: EnqueueOptions = {}) =>
    producer.enqueue(kind, args, { unique: options, ...rest });

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [BlockingHandler],
      awa: { queues: { default: {}, other: {} } },
    });
    producer = app.get(QueueProducer);
    dataSource = app.get(DataSource);
  });
  afterAll(async () => {
    BlockingHandler.release();
    await app?.close();
    await db?.drop();
  });

  it('resolves a duplicate of the same kind to the existing job and inserts nothing', async () => {
    const first = await unique('u.kind', { a: 1 });
    const second = await unique('u.kind', { a: 2 });
    expect(first).toEqual({
      id: expect.any(String),
      kind: 'u.kind',
      queue: 'default',
      duplicate: false,
      replaced: false,
    });
    expect(second).toEqual({ ...first, duplicate: true });
    expect(await countKind('u.kind')).toBe(1);
    const stored = await producer.getJob(first.id);
    expect(stored?.uniqueKey).toMatch(/^u\.kind:[0-9a-f]{64}$/);
    expect(stored?.args).toEqual({ a: 1 });
  });

  it('byArgs: the same args in another key order are a duplicate, other args are not', async () => {
    const first = await unique('u.args', { a: 1, b: { c: [1, 2], d: null } }, { byArgs: true });
    const reordered = await unique('u.args', { b: { d: null, c: [1, 2] }, a: 1 }, { byArgs: true });
    const other = await unique('u.args', { a: 1, b: { c: [2, 1], d: null } }, { byArgs: true });
    expect(reordered).toMatchObject({ id: first.id, duplicate: true });
    expect(other).toMatchObject({ duplicate: false });
    expect(other.id).not.toBe(first.id);
  });

  it('byQueue: the same kind in another queue is a duplicate only without byQueue', async () => {
    const first = await unique('u.queue', {}, {}, { queue: 'default' });
    const elsewhere = await unique('u.queue', {}, {}, { queue: 'other' });
    expect(elsewhere).toEqual({ ...first, duplicate: true }); // the holder's queue
    const byQueue = await unique('u.queue2', {}, { byQueue: true }, { queue: 'default' });
    const byQueueOther = await unique('u.queue2', {}, { byQueue: true }, { queue: 'other' });
    expect(byQueueOther).toMatchObject({ queue: 'other', duplicate: false });
    expect(byQueueOther.id).not.toBe(byQueue.id);
  });

  it('an explicit key replaces the kind: jobs of two kinds with one key are duplicates', async () => {
    const first = await unique('u.key.a', {}, { key: 'sync-user-42' });
    const second = await unique('u.key.b', {}, { key: 'sync-user-42' });
    expect(second).toEqual({ ...first, kind: 'u.key.a', duplicate: true });
    expect((await producer.getJob(first.id))?.uniqueKey).toMatch(/^sync-user-42:[0-9a-f]{64}$/);
    expect(await unique('u.key.a', {})).toMatchObject({ duplicate: false }); // the kind alone is another key
  });

  it('by default a cancelled job no longer blocks; with states it does', async () => {
    const first = await unique('u.states', {});
    await producer.cancel(first.id);
    const next = await unique('u.states', {});
    expect(next).toMatchObject({ duplicate: false });
    expect(next.id).not.toBe(first.id);

    const states = ['scheduled', 'available', 'running', 'retryable', 'cancelled'] as const;
    const kept = await unique('u.states.kept', {}, { states: [...states] });
    await producer.cancel(kept.id);
    expect(await unique('u.states.kept', {}, { states: [...states] })).toMatchObject({ id: kept.id, duplicate: true });
  });

  it('period: the key carries the bucket of the database clock at insert', async () => {
    const period = 60_000;
    const job = await unique('u.period', {}, { period });
    const [row] = await dataSource.query(
      `SELECT unique_key, floor(extract(epoch FROM created_at) * 1000 / $2)::bigint::text AS bucket
         FROM awa.all_jobs WHERE id = $1`,
      [job.id, period],
    );
    expect(row.unique_key).toMatch(new RegExp(`^u\\.period:[0-9a-f]{64}:${row.bucket}$`));
    // A period of about 35 years: the next bucket starts in 2039, so both calls share this one.
    const long = 2 ** 40;
    const a = await unique('u.period.long', {}, { period: long });
    expect(await unique('u.period.long', {}, { period: long })).toMatchObject({ id: a.id, duplicate: true });
    expect(await unique('u.period.long', {}, { period: long / 2 })).toMatchObject({ duplicate: false });
  });

  it('enqueueMany reports duplicates per item, also of an earlier item of the same batch', async () => {
    const existing = await unique('u.many.old', { old: true });
    const jobs = await producer.enqueueMany([
      { kind: 'u.many', args: { i: 0 }, unique: {} },
      { kind: 'u.plain', args: { i: 1 } },
      { kind: 'u.many', args: { i: 2 }, unique: {} },
      { kind: 'u.many.old', args: { i: 3 }, unique: {} },
      { kind: 'u.plain', args: { i: 4 } },
      { kind: 'u.many.b', args: { i: 5 }, unique: {} },
    ]);
    expect(jobs.map((j) => j.duplicate)).toEqual([false, false, true, true, false, false]);
    expect(jobs[2]!.id).toBe(jobs[0]!.id);
    expect(jobs[3]!.id).toBe(existing.id);
    for (const i of [0, 1, 4, 5]) expect((await producer.getJob(jobs[i]!.id))?.args).toEqual({ i });
    expect(new Set(jobs.map((j) => j.id)).size).toBe(5);
    expect(await countKind('u.many')).toBe(1);
    expect(await countKind('u.plain')).toBe(2);
  });

  describe('debounce (replace)', () => {
    it('replaces the args and runAt of a waiting duplicate, and its state by the new runAt', async () => {
      const later = new Date(Date.now() + HOUR);
      const first = await unique('u.replace', { v: 1 }, { replace: true }, { runAt: later });
      expect((await producer.getJob(first.id))?.state).toBe('scheduled');
      const evenLater = new Date(Date.now() + 2 * HOUR);
      const second = await unique('u.replace', { v: 2 }, { replace: true }, { runAt: evenLater });
      expect(second).toEqual({ ...first, duplicate: true, replaced: true });
      expect(await producer.getJob(first.id)).toMatchObject({ args: { v: 2 }, runAt: evenLater, state: 'scheduled' });
      const now = await unique('u.replace', { v: 3 }, { replace: true });
      expect(now).toMatchObject({ id: first.id, replaced: true });
      expect(await producer.getJob(first.id)).toMatchObject({ args: { v: 3 }, state: 'available' });
      expect(await countKind('u.replace')).toBe(1);
    });

    it('a duplicate without replace leaves the waiting job as it is', async () => {
      const first = await unique('u.noreplace', { v: 1 });
      expect(await unique('u.noreplace', { v: 2 })).toMatchObject({ id: first.id, duplicate: true, replaced: false });
      expect((await producer.getJob(first.id))?.args).toEqual({ v: 1 });
    });

    it('does not replace a running job', async () => {
      const first = await unique('u.block', { v: 1 }, { replace: true });
      await waitFor(() => BlockingHandler.started.includes(first.id), 15_000, 'the job to start');
      const second = await unique('u.block', { v: 2 }, { replace: true });
      expect(second).toMatchObject({ id: first.id, duplicate: true, replaced: false });
      expect(await producer.getJob(first.id)).toMatchObject({ args: { v: 1 }, state: 'running' });
      BlockingHandler.release();
      await waitFor(async () => (await producer.getJob(first.id))?.state === 'completed', 15_000, 'completion');
      expect(await unique('u.block', { v: 3 }, { replace: true })).toMatchObject({ duplicate: false });
    });

    it('in a batch, the last replacing duplicate wins', async () => {
      const jobs = await producer.enqueueMany([
        { kind: 'u.replace.many', args: { v: 1 }, unique: { replace: true } },
        { kind: 'u.replace.many', args: { v: 2 }, unique: { replace: true } },
        { kind: 'u.replace.many', args: { v: 3 }, unique: { replace: true } },
      ]);
      expect(jobs.map((j) => [j.duplicate, j.replaced])).toEqual([
        [false, false],
        [true, true],
        [true, true],
      ]);
      expect((await producer.getJob(jobs[0]!.id))?.args).toEqual({ v: 3 });
    });
  });

  describe("in the caller's transaction", () => {
    /** Starts the second enqueue while the first's transaction is open, and waits until it blocks on the index. */
    async function racingTransactions(kind: string, end: 'commit' | 'rollback') {
      let finish!: () => void;
      const open = new Promise<void>((resolve) => (finish = resolve));
      let firstId = '';
      const first = dataSource
        .transaction(async (manager) => {
          firstId = (await unique(kind, { tx: 1 }, {}, { manager })).id;
          await open;
          if (end === 'rollback') throw new Error('rolled back');
        })
        .catch((error: Error) => error.message);
      await waitFor(() => firstId !== '', 15_000, 'the first insert');
      const second = dataSource.transaction((manager) => unique(kind, { tx: 2 }, {}, { manager }));
      await waitFor(
        async () =>
          (
            await dataSource.query(
              `SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO awa.jobs%'`,
            )
          )[0].n === 1,
        15_000,
        'the second insert to wait on the unique index',
      );
      finish();
      return { firstId, firstOutcome: await first, second: await second };
    }

    it('a second transaction waits on the index and sees a duplicate once the first commits', async () => {
      const { firstId, second } = await racingTransactions('u.tx.commit', 'commit');
      expect(second).toMatchObject({ id: firstId, duplicate: true });
      expect(await countKind('u.tx.commit')).toBe(1);
    });

    it('a second transaction inserts its job when the first rolls back', async () => {
      const { firstId, firstOutcome, second } = await racingTransactions('u.tx.rollback', 'rollback');
      expect(firstOutcome).toBe('rolled back');
      expect(second).toMatchObject({ duplicate: false });
      expect(second.id).not.toBe(firstId);
      expect((await producer.getJob(second.id))?.args).toEqual({ tx: 2 });
      expect(await countKind('u.tx.rollback')).toBe(1);
    });
  });

  it('inserts again when the blocking job finishes between the conflict and the lookup', async () => {
    const holder = await unique('u.race', { v: 1 });
    // The insert has conflicted with `holder` and waits before returning: cancel the holder meanwhile.
    const gate = await createStatementGate(db.url, 8801, 'INSERT', 'awa.jobs', 'AFTER');
    try {
      await gate.close();
      const racing = unique('u.race', { v: 2 });
      await waitFor(async () => (await gate.waiting()) === 1, 15_000, 'the insert at the gate');
      expect(await producer.cancel(holder.id)).toMatchObject({ outcome: 'cancelled' });
      await gate.open();
      const job = await racing;
      expect(job).toMatchObject({ duplicate: false });
      expect(job.id).not.toBe(holder.id);
      expect((await producer.getJob(job.id))?.args).toEqual({ v: 2 });
    } finally {
      await gate.remove();
    }
  });
});
