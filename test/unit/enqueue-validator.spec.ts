import { AwaMessages } from '../../lib/awa.messages.js';
import { AwaErrorCodes, EnqueueValidationError } from '../../lib/errors/index.js';
import type { EnqueueManyItem } from '../../lib/interfaces/job.interface.js';
import { resolveAwaOptions } from '../../lib/options/awa-options.resolver.js';
import {
  ENQUEUE_OPTION_KEYS,
  checkEnqueueOptions,
  encodeJob,
  jobObject,
  jobsPayload,
} from '../../lib/producer/enqueue-validator.js';
import { caughtSync } from '../support/caught.js';

/** encodeJob refuses every bad input with an EnqueueValidationError naming the field, before any SQL. */
describe('encodeJob', () => {
  const options = resolveAwaOptions({ queues: { reports: {} }, maxArgsBytes: 100 });
  const toDefault = () => 'default';
  const encode = (item: Partial<EnqueueManyItem> & Record<string, unknown>, index?: number) =>
    encodeJob({ kind: 'x', args: {}, ...item } as EnqueueManyItem, options, toDefault, index);
  const circular: Record<string, unknown> = {};
  circular.self = circular;

  it.each<[string, Record<string, unknown>, string, string]>([
    ['an empty kind', { kind: '' }, 'kind', AwaMessages.enqueueKindInvalid()],
    ['a kind that is not a string', { kind: 42 }, 'kind', AwaMessages.enqueueKindInvalid()],
    ['a kind over 200 characters', { kind: 'k'.repeat(201) }, 'kind', AwaMessages.enqueueKindInvalid()],
    ['a kind with NUL', { kind: 'a\u0000b' }, 'kind', AwaMessages.enqueueKindUnstorable()],
    ['a kind with a lone surrogate', { kind: 'cut\ud83d' }, 'kind', AwaMessages.enqueueKindUnstorable()],
    ['an unknown queue', { queue: 'nope' }, 'queue', AwaMessages.enqueueQueueUnknown('nope', ['default', 'reports'])],
    ['a priority out of range', { priority: 40_000 }, 'priority', AwaMessages.enqueuePriorityInvalid(-32768, 32767)],
    ['a NaN priority', { priority: NaN }, 'priority', AwaMessages.enqueuePriorityInvalid(-32768, 32767)],
    ['maxAttempts 0', { maxAttempts: 0 }, 'maxAttempts', AwaMessages.enqueueMaxAttemptsInvalid()],
    ['fractional maxAttempts', { maxAttempts: 2.5 }, 'maxAttempts', AwaMessages.enqueueMaxAttemptsInvalid()],
    ['an invalid runAt', { runAt: new Date('nope') }, 'runAt', AwaMessages.enqueueRunAtInvalid()],
    ['a runAt that is a string', { runAt: '2030-01-01' }, 'runAt', AwaMessages.enqueueRunAtInvalid()],
    [
      'a runAt beyond year 9999',
      { runAt: new Date(Date.UTC(20000, 0, 1)) },
      'runAt',
      AwaMessages.enqueueRunAtInvalid(),
    ],
    ['undefined args', { args: undefined }, 'args', AwaMessages.enqueueArgsInvalid('undefined is not a JSON value')],
    ['a function as args', { args: () => 1 }, 'args', AwaMessages.enqueueArgsInvalid('function is not a JSON value')],
    [
      'args with NUL',
      { args: { s: 'a\u0000b' } },
      'args',
      AwaMessages.enqueueArgsInvalid('strings must not contain the NUL character (\\u0000)'),
    ],
    ['args over maxArgsBytes', { args: { s: 'x'.repeat(200) } }, 'args', AwaMessages.enqueueArgsTooLarge(208, 100)],
    [
      'a misspelt option',
      { runAfter: new Date() },
      'runAfter',
      AwaMessages.enqueueOptionUnknown('runAfter', 'runAt', true, []),
    ],
    [
      'a misspelt option far from any',
      { delay: 5 },
      'delay',
      AwaMessages.enqueueOptionUnknown('delay', 'runAt', false, [
        'kind',
        'args',
        'queue',
        'priority',
        'runAt',
        'maxAttempts',
        'unique',
        'tags',
        'concurrencyKey',
      ]),
    ],
    ['a manager in an item', { manager: {} }, 'manager', AwaMessages.enqueueManagerInItem()],
  ])('refuses %s', (_what, item, field, message) => {
    const error = caughtSync(() => encode(item));
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({ code: AwaErrorCodes.enqueueValidation, field, message, index: undefined });
  });

  it('refuses BigInt and circular args, passing on what JSON.stringify said', () => {
    for (const args of [{ n: 1n }, circular]) {
      const error = caughtSync(() => encode({ args }));
      expect(error).toBeInstanceOf(EnqueueValidationError);
      expect(error).toMatchObject({ code: AwaErrorCodes.enqueueValidation, field: 'args' });
    }
  });

  it("carries the item's index in enqueueMany, and refuses an item that is not an object", () => {
    expect(caughtSync(() => encode({ priority: 1.5 }, 3))).toMatchObject({ field: 'priority', index: 3 });
    const error = caughtSync(() => encodeJob(null as never, options, toDefault, 7));
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({ field: 'item', index: 7, message: AwaMessages.enqueueItemInvalid() });
  });

  it('encodes a valid job as one array of insertJobs, trailing nulls left out, and as an object', () => {
    const runAt = new Date('2030-01-02T03:04:05.000Z');
    const job = encodeJob(
      { kind: 'r', args: { a: 1 }, queue: 'reports', priority: -2, maxAttempts: 3, runAt },
      options,
      toDefault,
    );
    expect(JSON.parse(jobsPayload([job, encode({}), encode({ tags: ['t'] })]))).toEqual([
      ['r', 'reports', { a: 1 }, -2, 3, '2030-01-02T03:04:05.000Z'],
      ['x', 'default', {}, 0, 25],
      ['x', 'default', {}, 0, 25, null, ['t']],
    ]);
    expect(JSON.parse(jobsPayload([encode({})], '00-t-s-01'))).toEqual([
      ['x', 'default', {}, 0, 25, null, null, null, '00-t-s-01'],
    ]);
    expect(JSON.parse(jobObject(job))).toEqual({
      kind: 'r',
      queue: 'reports',
      args: { a: 1 },
      priority: -2,
      max_attempts: 3,
      run_at: '2030-01-02T03:04:05.000Z',
    });
    expect(JSON.parse(jobObject(encode({ concurrencyKey: 'k' }), '00-t-s-01', '"ord":4'))).toEqual({
      kind: 'x',
      queue: 'default',
      args: {},
      priority: 0,
      max_attempts: 25,
      run_at: null,
      concurrency_key: 'k',
      traceparent: '00-t-s-01',
      ord: 4,
    });
  });
});

describe('checkEnqueueOptions', () => {
  it('refuses enqueue options that are not an object', () => {
    const error = caughtSync(() => checkEnqueueOptions(null, ENQUEUE_OPTION_KEYS));
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({ field: 'options', index: undefined, message: AwaMessages.enqueueOptionsInvalid() });
  });

  it('refuses an unknown enqueue option, naming the nearest known one', () => {
    const error = caughtSync(() => checkEnqueueOptions({ priorty: 1 }, ENQUEUE_OPTION_KEYS));
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({
      code: AwaErrorCodes.enqueueValidation,
      field: 'priorty',
      message: AwaMessages.enqueueOptionUnknown('priorty', 'priority', true, ENQUEUE_OPTION_KEYS),
    });
  });

  it('accepts every documented enqueue option', () => {
    expect(() =>
      checkEnqueueOptions(
        { queue: 'q', priority: 1, runAt: new Date(), maxAttempts: 2, manager: undefined },
        ENQUEUE_OPTION_KEYS,
      ),
    ).not.toThrow();
  });
});
