import { Injectable } from '@nestjs/common';
import type { TestingModule } from '@nestjs/testing';
import {
  AwaErrorCodes,
  AwaMigrations,
  AwaModule,
  AwaOptionError,
  EnqueueValidationError,
  JobHandler,
  QueueProducer,
  type Job,
} from 'nestjs-awa';
import { AwaInit1764400000000 } from '../../migrations/index.js';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { AwaMessages } from '../../lib/awa.messages.js';
import { caught, caughtSync } from '../support/caught.js';
import { createTestDatabase, type TestDatabase } from '../support/test-database.js';
import { finishedJob } from '../support/job-waits.js';
import { startTestApp, waitFor } from '../support/test-app.js';

@Injectable()
class CarelessHandlers {
  @JobHandler('careless.throws-undefined')
  throwsUndefined() {
    throw undefined;
  }

  /** A hand-made thenable that "resolves" twice: only the first settlement counts. */
  @JobHandler('careless.resolves-twice')
  resolvesTwice() {
    return {
      then: (resolve: (v: number) => void) => {
        resolve(1);
        resolve(2);
      },
    };
  }

  @JobHandler('careless.never-settles', { queue: 'tight' })
  neverSettles(_job: Job) {
    return new Promise(() => undefined);
  }

  @JobHandler('careless.rejects-null')
  rejectsNull() {
    return Promise.reject(null);
  }

  @JobHandler('careless.sync-return')
  syncReturn() {
    return 'not a promise';
  }

  @JobHandler('careless.nul-in-error')
  nulInError() {
    throw new Error('bad \u0000 byte');
  }

  @JobHandler('careless.surrogate-in-error')
  surrogateInError() {
    const error = new Error(`cut ${'\ud83d\ude00'.slice(0, 1)} here`);
    error.name = 'Cut\ud83dError';
    throw error;
  }

  @JobHandler('select 1; drop table awa.jobs; --')
  sqlKind(job: Job) {
    return job.kind;
  }
}

/**
 * A catalogue of hostile or careless inputs. Each ends in a clear error, or in a documented
 * outcome, and loses nothing.
 */
describe('bad input catalogue', () => {
  let db: TestDatabase;
  let app: TestingModule;
  let producer: QueueProducer;
  let dataSource: DataSource;
  const jobCount = async () => Number((await dataSource.query('SELECT count(*) AS n FROM awa.all_jobs'))[0].n);
  const finished = (id: string) => finishedJob(producer, id);

  beforeAll(async () => {
    db = await createTestDatabase();
    app = await startTestApp({
      url: db.url,
      providers: [CarelessHandlers],
      awa: { queues: { default: { pollInterval: 100 }, tight: { deadlineDuration: 200, maxAttempts: 1 } } },
    });
    producer = app.get(QueueProducer);
    dataSource = app.get(DataSource);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('1. a kind carrying SQL is stored and handled as plain text', async () => {
    const kind = 'select 1; drop table awa.jobs; --';
    const job = await finished((await producer.enqueue(kind, {})).id);
    expect(job).toMatchObject({ kind, state: 'completed' });
  });

  it('2. a queue name carrying SQL is rejected as an unknown queue', async () => {
    const before = await jobCount();
    await expectRefused(() => producer.enqueue('x', {}, { queue: "default' OR '1'='1" }), {
      field: 'queue',
      message: AwaMessages.enqueueQueueUnknown("default' OR '1'='1", ['default', 'tight']),
    });
    expect(await jobCount()).toBe(before);
  });

  it('3. a queue option name carrying SQL fails at boot, naming it', () => {
    expectOptionRefused(
      () => AwaModule.forRoot({ queues: { 'a"; DROP SCHEMA awa; --': {} } }),
      'queues.a"; DROP SCHEMA awa; --',
    );
  });

  it('4. a 10 MB args payload is rejected with the documented limit', async () => {
    const before = await jobCount();
    await expectRefused(() => producer.enqueue('x', { blob: 'x'.repeat(10 * 1024 * 1024) }), {
      field: 'args',
      message: AwaMessages.enqueueArgsTooLarge(10 * 1024 * 1024 + 11, 1_048_576),
    });
    expect(await jobCount()).toBe(before);
  });

  it('5. a runAt far in the past runs now', async () => {
    const job = await producer.enqueue('careless.sync-return', {}, { runAt: new Date('0001-01-02T00:00:00Z') });
    expect((await finished(job.id)).state).toBe('completed');
  });

  it('6. a runAt far in the future is scheduled, and out-of-range years are rejected', async () => {
    const job = await producer.enqueue('x.future', {}, { runAt: new Date('9999-12-30T00:00:00Z') });
    expect((await producer.getJob(job.id))?.state).toBe('scheduled');
    await expectRefused(() => producer.enqueue('x', {}, { runAt: new Date(8.64e15) }), {
      field: 'runAt',
      message: AwaMessages.enqueueRunAtInvalid(),
    });
  });

  it('7. NaN options fail at boot, naming the option', () => {
    expectOptionRefused(
      () => AwaModule.forRoot({ queues: { default: { retryBaseDelay: NaN } } }),
      'queues.default.retryBaseDelay',
      'expected a number, got NaN',
    );
  });

  it('8. negative options fail at boot, naming the option', () => {
    expectOptionRefused(
      () => AwaModule.forRoot({ shutdownTimeout: -1 }),
      'shutdownTimeout',
      'must not be negative, got -1',
    );
  });

  it('9. a handler that throws undefined fails with a readable error', async () => {
    const job = await finished((await producer.enqueue('careless.throws-undefined', {}, { maxAttempts: 1 })).id);
    expect(job).toMatchObject({
      state: 'failed',
      errors: [expect.objectContaining({ error: 'a handler threw undefined' })],
    });
  });

  it('10. a handler that rejects with null fails with a readable error', async () => {
    const job = await finished((await producer.enqueue('careless.rejects-null', {}, { maxAttempts: 1 })).id);
    expect(job).toMatchObject({ state: 'failed', errors: [expect.objectContaining({ error: 'thrown value: null' })] });
  });

  it('11. a handler that resolves twice completes once', async () => {
    const job = await finished((await producer.enqueue('careless.resolves-twice', {})).id);
    expect(job).toMatchObject({ state: 'completed', attempt: 1, errors: [] }); // one claim, one completion
  });

  it('12. a handler that never settles ends at its deadline and fails', async () => {
    const job = await finished((await producer.enqueue('careless.never-settles', {})).id);
    expect(job).toMatchObject({
      state: 'failed',
      errors: [expect.objectContaining({ error: 'hard deadline exceeded' })],
    });
  });

  it('13. a handler returning a plain value completes', async () => {
    expect((await finished((await producer.enqueue('careless.sync-return', {})).id)).state).toBe('completed');
  });

  it('14. a job row edited by hand into an unknown state is refused by the database', async () => {
    const { id } = await producer.enqueue('x.edit', {}, { runAt: new Date(Date.now() + 3_600_000) });
    await expect(dataSource.query(`UPDATE awa.jobs SET state = 'zombie' WHERE id = $1`, [id])).rejects.toThrow(
      /jobs_state_check/,
    );
    expect((await producer.getJob(id))?.state).toBe('scheduled');
  });

  it('15. a job row edited by hand to a negative attempt or zero max_attempts is refused', async () => {
    const { id } = await producer.enqueue('x.edit2', {}, { runAt: new Date(Date.now() + 3_600_000) });
    await expect(dataSource.query(`UPDATE awa.jobs SET max_attempts = 0 WHERE id = $1`, [id])).rejects.toThrow(
      /check constraint/,
    );
    await expect(dataSource.query(`UPDATE awa.jobs SET attempt = -1 WHERE id = $1`, [id])).rejects.toThrow(
      /check constraint/,
    );
  });

  it('16. the migrations run twice are a no-op', async () => {
    const queryRunner = dataSource.createQueryRunner();
    try {
      for (const Migration of [...AwaMigrations, ...AwaMigrations]) await new Migration().up(queryRunner);
    } finally {
      await queryRunner.release();
    }
    const applied: Array<{ name: string }> = await dataSource.query('SELECT name FROM awa.schema_migrations');
    expect(applied.map((m) => m.name).sort()).toEqual(AwaMigrations.map((M) => new M().name).sort());
  });

  it('17. the migration run concurrently from two connections applies once', async () => {
    const fresh = await createTestDatabase();
    const sources = [0, 1, 2].map(() => new DataSource({ type: 'postgres', url: fresh.url }));
    try {
      await Promise.all(sources.map((s) => s.initialize()));
      await Promise.all(
        sources.map(async (s) => {
          const queryRunner = s.createQueryRunner();
          try {
            await new AwaInit1764400000000().up(queryRunner);
          } finally {
            await queryRunner.release();
          }
        }),
      );
      const applied = await sources[0]!.query('SELECT name FROM awa.schema_migrations');
      expect(applied).toEqual([{ name: 'AwaInit1764400000000' }]);
      expect((await sources[0]!.query(`SELECT to_regclass('awa.jobs') AS t`))[0].t).toBe('awa.jobs');
    } finally {
      await Promise.all(sources.map((s) => s.destroy()));
      await fresh.drop();
    }
  });

  it('18. a kind longer than 200 characters is rejected', async () => {
    await expectRefused(() => producer.enqueue('k'.repeat(201), {}), {
      field: 'kind',
      message: AwaMessages.enqueueKindInvalid(),
    });
  });

  it('19. a priority of NaN or Infinity is rejected', async () => {
    await expectRefused(() => producer.enqueue('x', {}, { priority: NaN }), { field: 'priority' });
    await expectRefused(() => producer.enqueue('x', {}, { priority: Infinity }), { field: 'priority' });
  });

  it('20. maxAttempts of a huge or fractional number is rejected', async () => {
    await expectRefused(() => producer.enqueue('x', {}, { maxAttempts: 1e12 }), { field: 'maxAttempts' });
    await expectRefused(() => producer.enqueue('x', {}, { maxAttempts: 2.5 }), { field: 'maxAttempts' });
  });

  it('21. args with a NUL character are rejected before PostgreSQL would', async () => {
    await expectRefused(() => producer.enqueue('x', { s: '\u0000' }), { field: 'args', message: NUL_IN_ARGS });
  });

  it('22. a batch with one bad item inserts nothing', async () => {
    const before = await jobCount();
    await expectRefused(
      () =>
        producer.enqueueMany([
          { kind: 'ok', args: {} },
          { kind: 'ok', args: { n: 1n } },
        ]),
      { field: 'args', index: 1 },
    );
    expect(await jobCount()).toBe(before);
  });

  it('23. a job row deleted by hand while it runs costs nothing but a warning', async () => {
    const { id } = await producer.enqueue('careless.never-settles', {});
    await waitFor(async () => (await producer.getJob(id))?.state === 'running');
    await dataSource.query('DELETE FROM awa.jobs WHERE id = $1', [id]);
    // At its deadline the worker's fenced write finds no job: its lease is dropped, nothing else.
    await waitFor(
      async () => (await dataSource.query('SELECT 1 FROM awa.active_leases WHERE job_id = $1', [id])).length === 0,
    );
    expect((await finished((await producer.enqueue('careless.sync-return', {})).id)).state).toBe('completed');
  });

  it('24. an enqueue with a manager of another DataSource is rejected', async () => {
    const other = new DataSource({ type: 'postgres', url: db.url });
    await other.initialize();
    try {
      await expectRefused(() => other.transaction((manager) => producer.enqueue('x', {}, { manager })), {
        field: 'manager',
        message: AwaMessages.enqueueManagerInvalid(),
      });
    } finally {
      await other.destroy();
    }
  });

  it('25. a NOTIFY with garbage on the job channels is ignored', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(`SELECT pg_notify('awa_jobs', 'no-such-queue'), pg_notify('awa_cancel', 'not-an-id')`);
    } finally {
      await client.end();
    }
    expect((await finished((await producer.enqueue('careless.sync-return', {})).id)).state).toBe('completed');
  });

  it(
    '26. args with a lone UTF-16 surrogate are rejected before the ' + 'database, and the batch inserts nothing',
    async () => {
      const before = await jobCount();
      const cut = '\ud83d\ude00'.slice(0, 1); // a string cut in the middle of an emoji
      await expectRefused(
        () =>
          producer.enqueueMany([
            { kind: 'ok', args: {} },
            { kind: 'ok', args: { s: `x${cut}` } },
          ]),
        {
          field: 'args',
          index: 1,
          message: SURROGATE_IN_ARGS,
        },
      );
      await expectRefused(() => producer.enqueue('x', { [`k${'\udc00'}`]: 1 }), {
        field: 'args',
        message: SURROGATE_IN_ARGS,
      });
      expect(await jobCount()).toBe(before);
    },
  );

  it('27. whole emoji and other astral characters in args are stored faithfully', async () => {
    const args = { s: 'smile \ud83d\ude00, math \ud835\udc00', deep: ['\u{1f680}'] };
    const { id } = await producer.enqueue('x.emoji', args, { runAt: new Date(Date.now() + 3_600_000) });
    expect((await producer.getJob(id))?.args).toEqual(args);
  });

  it('28. a kind with NUL or a lone surrogate is rejected before the database', async () => {
    const before = await jobCount();
    await expectRefused(() => producer.enqueue('bad\u0000kind', {}), {
      field: 'kind',
      message: AwaMessages.enqueueKindUnstorable(),
    });
    await expectRefused(
      () =>
        producer.enqueueMany([
          { kind: 'ok', args: {} },
          { kind: 'cut\ud83d', args: {} },
        ]),
      {
        field: 'kind',
        index: 1,
        message: AwaMessages.enqueueKindUnstorable(),
      },
    );
    expect(await jobCount()).toBe(before);
  });

  it('29. text with a literal backslash before u0000 (or before ud83d) is stored faithfully', async () => {
    const args = { path: 'C:\\u0000\\ud83d', odd: '\\\\u0000', mixed: '\\\u00e9u0000' };
    const { id } = await producer.enqueue('x.backslash', args, { runAt: new Date(Date.now() + 3_600_000) });
    expect((await producer.getJob(id))?.args).toEqual(args);
    // An escaped backslash right before a real NUL is still a NUL.
    await expectRefused(() => producer.enqueue('x', { s: '\\\u0000' }), { field: 'args', message: NUL_IN_ARGS });
  });

  it('30. getJob and cancel with an id above the bigint maximum find nothing', async () => {
    for (const id of ['9223372036854775808', '9999999999999999999']) {
      expect(await producer.getJob(id)).toBeNull();
      expect(await producer.cancel(id)).toEqual({ outcome: 'not-found' });
    }
    expect(await producer.getJob('9223372036854775807')).toBeNull();
    expect(await producer.cancel('9223372036854775807')).toEqual({ outcome: 'not-found' });
  });

  it(
    '31. retention and heartbeatStaleAfter so large that now() minus ' + 'them leaves the timestamp range fail at boot',
    () => {
      expectOptionRefused(() => AwaModule.forRoot({ retention: { completed: 1e15 } }), 'retention.completed');
      expectOptionRefused(
        () => AwaModule.forRoot({ retention: { failed: Number.MAX_SAFE_INTEGER } }),
        'retention.failed',
      );
      expectOptionRefused(() => AwaModule.forRoot({ heartbeatStaleAfter: 1e15 }), 'heartbeatStaleAfter');
      expect(largestAccepted('heartbeatStaleAfter')).toBeLessThan(1e15);
    },
  );

  it(
    '32. the largest accepted retention and heartbeatStaleAfter ' + 'still make valid intervals in the statements',
    async () => {
      const max = largestAccepted('heartbeatStaleAfter');
      expect(largestAccepted('retention.completed')).toBe(max);
      const { deleteFinishedJobs, rescueStaleHeartbeats } = await import('../../lib/sql/maintenance.sql.js');
      await expect(dataSource.query(deleteFinishedJobs.text, [max, max, 10])).resolves.toBeDefined();
      await expect(
        dataSource.query(rescueStaleHeartbeats.text, [[], [], [], 1_000, 1_000, 10, max, 'x']),
      ).resolves.toBeDefined();
    },
  );

  it(
    '33. a handler error with NUL or a lone surrogate is stored ' + 'readably, and fails no other job of its batch',
    async () => {
      const [nul, cut] = await producer.enqueueMany([
        { kind: 'careless.nul-in-error', args: {}, maxAttempts: 1 },
        { kind: 'careless.surrogate-in-error', args: {}, maxAttempts: 1 },
      ]);
      expect(await finished(nul!.id)).toMatchObject({
        state: 'failed',
        errors: [expect.objectContaining({ error: 'Error: bad \\0 byte' })],
      });
      expect(await finished(cut!.id)).toMatchObject({
        state: 'failed',
        errors: [expect.objectContaining({ error: 'Cut\ufffdError: cut \ufffd here' })],
      });
    },
  );
});

/** The `must be at most N` bound the options resolver reports for `path`. */
function largestAccepted(path: string): number {
  const options = path === 'heartbeatStaleAfter' ? { heartbeatStaleAfter: 1e16 } : { retention: { completed: 1e16 } };
  try {
    AwaModule.forRoot(options);
  } catch (error) {
    const bound =
      error instanceof AwaOptionError && error.path === path ? /^must be at most (\d+)/.exec(error.problem) : null;
    if (bound) return Number(bound[1]);
  }
  throw new Error(`no upper bound reported for ${path}`);
}

const NUL_IN_ARGS = AwaMessages.enqueueArgsInvalid('strings must not contain the NUL character (\\u0000)');
const SURROGATE_IN_ARGS = AwaMessages.enqueueArgsInvalid(
  'strings must not contain a lone UTF-16 surrogate (a string cut in the middle of a character)',
);

/** `call` is refused with an EnqueueValidationError carrying `expected` (field, index, message). */
async function expectRefused(call: () => Promise<unknown>, expected: Partial<EnqueueValidationError>): Promise<void> {
  const error = await caught(call);
  expect(error).toBeInstanceOf(EnqueueValidationError);
  expect(error).toMatchObject({ code: AwaErrorCodes.enqueueValidation, ...expected });
}

/** `run` throws an AwaOptionError for `path` (and, if given, that `problem`). */
function expectOptionRefused(run: () => unknown, path: string, problem?: string): void {
  const error = caughtSync(run);
  expect(error).toBeInstanceOf(AwaOptionError);
  expect(error).toMatchObject({
    code: AwaErrorCodes.invalidOption,
    path,
    ...(problem === undefined ? {} : { problem }),
  });
}
