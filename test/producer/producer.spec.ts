import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  AwaErrorCodes,
  EnqueueValidationError,
  JobHandler,
  QueueProducer,
  type EnqueueManyItem,
  type EnqueueOptions,
} from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { AwaMessages } from '../../lib/awa.messages.js';
import { LARGE_BATCH_BYTES, MAX_BATCH_BYTES } from '../../lib/producer/enqueue-validator.js';
import { caught } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp } from '../support/test-app.js';

@Injectable()
class ReportHandler {
  @JobHandler('report.render', { queue: 'reports' }) render() {}
}

/** The producer checks every input before touching the database, and can join the caller's transaction. */
describe('QueueProducer', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  let dataSource: DataSource;
  const count = async () => Number((await dataSource.query('SELECT count(*) AS n FROM awa.all_jobs'))[0].n);

  beforeAll(async () => {
    db = await createTestDatabase();
    // Workers are started (the reports handler exists) but claim nothing of kinds used here.
    app = await startTestApp({
      url: db.url,
      providers: [ReportHandler],
      awa: { queues: { default: {}, reports: { concurrency: 1 } }, maxArgsBytes: 1_048_576 },
    });
    producer = app.get(QueueProducer);
    dataSource = app.get(DataSource);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const circular: Record<string, unknown> = {};
  circular.self = circular;
  const bad: Array<[string, () => Promise<unknown>, Partial<EnqueueValidationError>]> = [
    ['an empty kind', () => producer.enqueue('', {}), { field: 'kind', message: AwaMessages.enqueueKindInvalid() }],
    [
      'a kind that is not a string',
      () => producer.enqueue(42 as unknown as string, {}),
      { field: 'kind', message: AwaMessages.enqueueKindInvalid() },
    ],
    [
      'an unknown queue',
      () => producer.enqueue('x', {}, { queue: 'nope' }),
      { field: 'queue', message: AwaMessages.enqueueQueueUnknown('nope', ['default', 'reports']) },
    ],
    [
      'a queue name carrying SQL',
      () => producer.enqueue('x', {}, { queue: "default'; DROP TABLE awa.jobs; --" }),
      { field: 'queue' },
    ],
    ['BigInt args', () => producer.enqueue('x', { n: 10n }), { field: 'args' }],
    ['circular args', () => producer.enqueue('x', circular), { field: 'args' }],
    [
      'undefined args',
      () => producer.enqueue('x', undefined),
      { field: 'args', message: AwaMessages.enqueueArgsInvalid('undefined is not a JSON value') },
    ],
    [
      'a function as args',
      () => producer.enqueue('x', () => 1),
      { field: 'args', message: AwaMessages.enqueueArgsInvalid('function is not a JSON value') },
    ],
    ['a NUL character', () => producer.enqueue('x', { s: 'a\u0000b' }), { field: 'args' }],
    [
      'args over the size limit',
      () => producer.enqueue('x', { blob: 'x'.repeat(2 * 1024 * 1024) }),
      { field: 'args', message: AwaMessages.enqueueArgsTooLarge(2 * 1024 * 1024 + 11, 1_048_576) },
    ],
    [
      'an invalid runAt',
      () => producer.enqueue('x', {}, { runAt: new Date('nope') }),
      { field: 'runAt', message: AwaMessages.enqueueRunAtInvalid() },
    ],
    [
      'a runAt that is not a Date',
      () => producer.enqueue('x', {}, { runAt: '2030-01-01' as unknown as Date }),
      { field: 'runAt' },
    ],
    [
      'a runAt beyond year 9999',
      () => producer.enqueue('x', {}, { runAt: new Date(Date.UTC(20000, 0, 1)) }),
      { field: 'runAt' },
    ],
    [
      'a priority out of range',
      () => producer.enqueue('x', {}, { priority: 40_000 }),
      { field: 'priority', message: AwaMessages.enqueuePriorityInvalid(-32768, 32767) },
    ],
    ['a fractional priority', () => producer.enqueue('x', {}, { priority: 1.5 }), { field: 'priority' }],
    [
      'maxAttempts 0',
      () => producer.enqueue('x', {}, { maxAttempts: 0 }),
      { field: 'maxAttempts', message: AwaMessages.enqueueMaxAttemptsInvalid() },
    ],
    [
      'a manager that is not an EntityManager',
      () => producer.enqueue('x', {}, { manager: {} as never }),
      { field: 'manager', message: AwaMessages.enqueueManagerInvalid() },
    ],
    [
      'one bad item in a batch',
      () =>
        producer.enqueueMany([
          { kind: 'x', args: {} },
          { kind: '', args: {} },
        ]),
      { field: 'kind', index: 1 },
    ],
    [
      'enqueueMany with a non-array',
      () => producer.enqueueMany({ kind: 'x', args: {} } as never),
      { field: 'items', message: AwaMessages.enqueueManyNotArray() },
    ],
    [
      'an enqueueMany item that is not an object',
      () => producer.enqueueMany([{ kind: 'x', args: {} }, null as never]),
      { field: 'item', index: 1 },
    ],
    [
      'a misspelt enqueue option',
      () => producer.enqueue('x', {}, { runAfter: new Date() } as EnqueueOptions),
      { field: 'runAfter', index: undefined, message: AwaMessages.enqueueOptionUnknown('runAfter', 'runAt', true, []) },
    ],
    [
      'a misspelt option on an enqueueMany item',
      () => producer.enqueueMany([{ kind: 'x', args: {} }, { kind: 'x', args: {}, priorty: 1 } as EnqueueManyItem]),
      { field: 'priorty', index: 1, message: AwaMessages.enqueueOptionUnknown('priorty', 'priority', true, []) },
    ],
    [
      'a manager on an enqueueMany item',
      () => producer.enqueueMany([{ kind: 'x', args: {}, manager: dataSource.manager } as EnqueueManyItem]),
      { field: 'manager', index: 0, message: AwaMessages.enqueueManagerInItem() },
    ],
    [
      'an unknown enqueueMany option',
      () => producer.enqueueMany([{ kind: 'x', args: {} }], { mangaer: dataSource.manager } as never),
      { field: 'mangaer', message: AwaMessages.enqueueOptionUnknown('mangaer', 'manager', true, []) },
    ],
    [
      'an enqueueMany batch over 256 MiB of JSON (more than one statement takes)',
      () => producer.enqueueMany(Array.from({ length: 270 }, () => ({ kind: 'x', args: 'a'.repeat(1_000_000) }))),
      { field: 'jobs', message: AwaMessages.enqueueBatchTooLarge(270 * (1_000_002 + 64), MAX_BATCH_BYTES) },
    ],
    [
      'enqueue options that are not an object',
      () => producer.enqueue('x', {}, null as never),
      { field: 'options', message: AwaMessages.enqueueOptionsInvalid() },
    ],
  ];

  it.each(bad)('rejects %s before touching the database', async (_what, call, expected) => {
    const before = await count();
    const error = await caught(call);
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({ code: AwaErrorCodes.enqueueValidation, ...expected });
    expect(await count()).toBe(before);
  });

  it('enqueues a batch past LARGE_BATCH_BYTES whole, through the JSON-text statement', async () => {
    // 40 jobs of 1 MB of JSON: 40 MB, past LARGE_BATCH_BYTES. As one jsonb, a batch of small numbers
    // this size would be about six times its text (12 bytes for each one-digit number), past
    // PostgreSQL's 256 MiB for one jsonb; the JSON-text statement makes each args a jsonb of its own.
    const args = { text: 'a'.repeat(1_000_000) };
    expect(JSON.stringify(args).length * 40).toBeGreaterThan(LARGE_BATCH_BYTES);
    const jobs = await producer.enqueueMany(
      Array.from({ length: 40 }, (_, i) => ({ kind: 'x.large', args, priority: i, tags: ['big'] })),
    );
    expect(jobs).toHaveLength(40);
    const rows = await dataSource.query(
      `SELECT id::text, priority, length(args->>'text') AS len, tags FROM awa.jobs WHERE kind = 'x.large' ORDER BY awa.jobs.id`,
    );
    expect(rows).toEqual(jobs.map((j, i) => ({ id: j.id, priority: i, len: 1_000_000, tags: ['big'] })));
  });

  it('enqueues a job and reads it back', async () => {
    const job = await producer.enqueue('x.read', { a: [1, 'two', { three: true }] }, { priority: -3, maxAttempts: 4 });
    expect(job).toEqual({
      id: expect.stringMatching(/^\d+$/),
      kind: 'x.read',
      queue: 'default',
      duplicate: false,
      replaced: false,
    });
    expect(await producer.getJob(job.id)).toMatchObject({
      id: job.id,
      kind: 'x.read',
      queue: 'default',
      args: { a: [1, 'two', { three: true }] },
      state: 'available',
      priority: -3,
      attempt: 0,
      maxAttempts: 4,
      errors: [],
      runLease: '0',
      attemptedAt: null,
      finalizedAt: null,
    });
  });

  it("sends a kind with a local handler to that handler's queue by default", async () => {
    const job = await producer.enqueue('report.other', {});
    expect(job.queue).toBe('default');
    const local = await dataSource.query('SELECT queue FROM awa.all_jobs WHERE kind = $1 LIMIT 1', ['x.read']);
    expect(local[0].queue).toBe('default');
    // report.render is handled here on 'reports'; without `queue` it must go there.
    await dataSource.query("UPDATE awa.jobs SET state = 'cancelled' WHERE kind = 'report.render'");
    const handled = await producer.enqueue('report.render', {}, { runAt: new Date(Date.now() + 3_600_000) });
    expect(handled.queue).toBe('reports');
  });

  it('stores a future runAt as scheduled and a past one as available', async () => {
    const later = await producer.enqueue('x.later', {}, { runAt: new Date(Date.now() + 3_600_000) });
    const past = await producer.enqueue('x.past', {}, { runAt: new Date('1999-01-01T00:00:00Z') });
    expect((await producer.getJob(later.id))?.state).toBe('scheduled');
    expect((await producer.getJob(past.id))?.state).toBe('available');
  });

  it('enqueueMany returns ids in input order', async () => {
    const jobs = await producer.enqueueMany(Array.from({ length: 50 }, (_, i) => ({ kind: 'x.many', args: { i } })));
    expect(jobs).toHaveLength(50);
    for (const [i, job] of jobs.entries()) expect((await producer.getJob(job.id))?.args).toEqual({ i });
    expect(await producer.enqueueMany([])).toEqual([]);
  });

  it("commits the job with the caller's transaction", async () => {
    const job = await dataSource.transaction(async (manager) => {
      const j = await producer.enqueue('x.tx', { ok: true }, { manager });
      // Not visible outside the transaction before commit.
      expect(await producer.getJob(j.id)).toBeNull();
      return j;
    });
    expect((await producer.getJob(job.id))?.state).toBe('available');
  });

  it("loses the job with the caller's rolled-back transaction", async () => {
    let id = '';
    await expect(
      dataSource.transaction(async (manager) => {
        const [a, b] = await producer.enqueueMany(
          [
            { kind: 'x.rb', args: {} },
            { kind: 'x.rb', args: {} },
          ],
          { manager },
        );
        id = a!.id;
        expect(b).toBeDefined();
        throw new Error('caller rolls back');
      }),
    ).rejects.toThrow('caller rolls back');
    expect(id).not.toBe('');
    expect(await producer.getJob(id)).toBeNull();
  });

  it('getJob returns null for unknown or malformed ids', async () => {
    expect(await producer.getJob('999999999')).toBeNull();
    expect(await producer.getJob('1; DROP TABLE awa.jobs')).toBeNull();
  });
});
