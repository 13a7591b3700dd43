import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import { JobHandler, QueueProducer, type Job } from 'nestjs-awa';
import pg from 'pg';
import { JobValueMessages } from '../../lib/awa.messages.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { startTestApp, waitFor } from '../support/test-app.js';

const MAX_OUTPUT_BYTES = 20_000;

const circular = () => {
  const value: Record<string, unknown> = { name: 'loop' };
  value.self = value;
  return value;
};

/** What each named handler returns. */
const RETURNS: Record<string, () => unknown> = {
  object: () => ({ sent: 3, ids: ['a', 'b'] }),
  string: () => 'done',
  zero: () => 0,
  false: () => false,
  null: () => null,
  undefined: () => undefined,
  exactlyAtCap: () => 'x'.repeat(MAX_OUTPUT_BYTES - 2), // two quotes make it MAX_OUTPUT_BYTES of JSON
  overCap: () => ({ blob: 'é'.repeat(MAX_OUTPUT_BYTES) }),
  bigint: () => ({ n: 10n }),
  circular,
  function: () => () => 1,
  nul: () => 'a\u0000b',
  /** JSON the server's parser refuses: nested deeper than its (here lowered) stack allows. */
  deep: () => {
    let value: unknown[] = [];
    for (let i = 0; i < 3_000; i++) value = [value];
    return value;
  },
};

@Injectable()
class Returners {
  @JobHandler('returns')
  async returns(job: Job<{ what: string }>) {
    await Promise.resolve();
    return RETURNS[job.args.what]!();
  }
}

/** A handler's return value is stored as the job's output, in the fenced completion. */
describe('output', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;

  beforeAll(async () => {
    db = await createTestDatabase();
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query(
      `DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET max_stack_depth = %L', current_database(), '100kB'); END $$`,
    );
    await admin.end();
    app = await startTestApp({
      url: db.url,
      providers: [Returners],
      awa: { maxOutputBytes: MAX_OUTPUT_BYTES, queues: { default: { pollInterval: 100 } } },
    });
    producer = app.get(QueueProducer);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const completed = (what: string) =>
    producer.enqueue('returns', { what }).then(({ id }) =>
      waitFor(
        async () => {
          const job = await producer.getJob(id);
          return job && job.state !== 'available' && job.state !== 'running' ? job : null;
        },
        20_000,
        `job ${id} (${what}) to finish`,
      ),
    );

  it.each<[string, unknown]>([
    ['object', { sent: 3, ids: ['a', 'b'] }],
    ['string', 'done'],
    ['zero', 0],
    ['false', false],
    ['null', null],
    ['undefined', null],
    ['exactlyAtCap', 'x'.repeat(MAX_OUTPUT_BYTES - 2)],
  ])('stores a returned %s as the output, and no error entry', async (what, output) => {
    const job = await completed(what);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, errors: [] });
    expect(job.output).toEqual(output);
  });

  it('completes a job whose output is over maxOutputBytes, with output null and an entry saying so', async () => {
    const job = await completed('overCap');
    const bytes = Buffer.byteLength(JSON.stringify(RETURNS.overCap!()));
    expect(job).toMatchObject({
      state: 'completed',
      output: null,
      errors: [{ attempt: 1, error: JobValueMessages.outputTooLarge(bytes, MAX_OUTPUT_BYTES) }],
    });
  });

  it.each([
    ['bigint', 'BigInt'],
    ['circular', 'circular'],
    ['function', JobValueMessages.notJson('function')],
    ['nul', JobValueMessages.nul],
  ])(
    'completes a job that returned a %s, which is not storable JSON, with output null and an entry',
    async (what, why) => {
      const job = await completed(what);
      expect(job).toMatchObject({ state: 'completed', output: null, errors: [{ attempt: 1 }] });
      expect(job.errors[0]!.error).toContain("output not stored: the handler's return value is not a JSON value");
      expect(job.errors[0]!.error).toContain(why);
    },
  );

  it('completes a job whose output the database refuses, with output null and an entry, not a retry loop', async () => {
    const job = await completed('deep');
    expect(job).toMatchObject({ state: 'completed', attempt: 1, output: null, errors: [{ attempt: 1 }] });
    expect(job.errors[0]!.error).toContain("output not stored: the database refused the handler's return value");
    expect(job.errors[0]!.error).toContain('stack depth limit exceeded');
  });

  it('completes jobs with and without output side by side, each with its own output', async () => {
    const whats = ['object', 'undefined', 'overCap', 'string', 'undefined'];
    const jobs = await Promise.all(whats.map(completed));
    expect(jobs.map((j) => [j.state, j.output, j.errors.length])).toEqual([
      ['completed', { sent: 3, ids: ['a', 'b'] }, 0],
      ['completed', null, 0],
      ['completed', null, 1],
      ['completed', 'done', 0],
      ['completed', null, 0],
    ]);
  });
});
