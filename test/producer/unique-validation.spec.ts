import { AwaErrorCodes, EnqueueValidationError, JOB_STATES, QueueProducer, type EnqueueOptions } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { AwaMessages, UniqueMessages } from '../../lib/awa.messages.js';
import { caught } from '../support/caught.js';
import { useTestApp } from '../support/block-app.js';

const STATES_MESSAGE = UniqueMessages.statesInvalid(
  ['scheduled', 'available', 'running', 'retryable'],
  ['completed', 'failed', 'cancelled'],
);
const KNOWN = ['unique.key', 'unique.byArgs', 'unique.byQueue', 'unique.period', 'unique.states', 'unique.replace'];

/** The options `unique` and `tags` are checked before the database is touched. */
describe('QueueProducer unique and tags validation', () => {
  const block = useTestApp({});
  let producer: QueueProducer;
  let dataSource: DataSource;
  const count = async () => Number((await dataSource.query('SELECT count(*) AS n FROM awa.all_jobs'))[0].n);

  beforeAll(() => {
    producer = block.app.get(QueueProducer);
    dataSource = block.app.get(DataSource);
  });

  const withUnique = (unique: unknown) => () => producer.enqueue('x', {}, { unique } as EnqueueOptions);
  const withTags = (tags: unknown) => () => producer.enqueue('x', {}, { tags } as EnqueueOptions);
  const tagsMessage = UniqueMessages.tagsInvalid(20, 100);
  const bad: Array<[string, () => Promise<unknown>, Partial<EnqueueValidationError>]> = [
    ['unique that is not an object', withUnique(true), { field: 'unique', message: UniqueMessages.uniqueInvalid() }],
    ['unique as an array', withUnique([]), { field: 'unique' }],
    [
      'a misspelt unique option',
      withUnique({ byArg: true }),
      {
        field: 'unique.byArg',
        message: AwaMessages.enqueueOptionUnknown('unique.byArg', 'unique.byArgs', true, KNOWN),
      },
    ],
    ['an empty key', withUnique({ key: '' }), { field: 'unique.key', message: UniqueMessages.keyInvalid(200) }],
    ['a key over 200 characters', withUnique({ key: 'k'.repeat(201) }), { field: 'unique.key' }],
    ['a key that is not a string', withUnique({ key: 42 }), { field: 'unique.key' }],
    ['a key with a NUL character', withUnique({ key: 'a\u0000' }), { field: 'unique.key' }],
    ['byArgs that is not a boolean', withUnique({ byArgs: 'yes' }), { field: 'unique.byArgs' }],
    [
      'replace that is not a boolean',
      withUnique({ replace: 1 }),
      { field: 'unique.replace', message: UniqueMessages.flagInvalid('replace') },
    ],
    ['a zero period', withUnique({ period: 0 }), { field: 'unique.period', message: UniqueMessages.periodInvalid() }],
    ['a fractional period', withUnique({ period: 1.5 }), { field: 'unique.period' }],
    ['a period that is not a number', withUnique({ period: '1h' }), { field: 'unique.period' }],
    ['empty states', withUnique({ states: [] }), { field: 'unique.states', message: STATES_MESSAGE }],
    ['an unknown state', withUnique({ states: ['scheduled', 'available', 'running', 'retryable', 'done'] }), {}],
    ['states without running', withUnique({ states: ['scheduled', 'available', 'retryable'] }), {}],
    ['states that are not an array', withUnique({ states: 'available' }), { field: 'unique.states' }],
    ['tags that are not an array', withTags('a'), { field: 'tags', message: tagsMessage }],
    ['an empty tag', withTags(['a', '']), { field: 'tags' }],
    ['a tag that is not a string', withTags(['a', 1]), { field: 'tags' }],
    ['a tag over 100 characters', withTags(['t'.repeat(101)]), { field: 'tags' }],
    ['21 tags', withTags(Array.from({ length: 21 }, (_, i) => `t${i}`)), { field: 'tags' }],
    ['a repeated tag', withTags(['a', 'b', 'a']), { field: 'tags' }],
    ['a tag with a lone surrogate', withTags(['\uD800']), { field: 'tags' }],
    [
      'a bad unique option on an enqueueMany item',
      () =>
        producer.enqueueMany([
          { kind: 'x', args: {} },
          { kind: 'x', args: {}, unique: { period: -1 } },
        ]),
      { field: 'unique.period', index: 1 },
    ],
    [
      'bad tags on an enqueueMany item',
      () => producer.enqueueMany([{ kind: 'x', args: {}, tags: ['a', 'a'] }]),
      { field: 'tags', index: 0 },
    ],
  ];

  it.each(bad)('rejects %s before touching the database', async (_what, call, expected) => {
    const before = await count();
    const error = await caught(call);
    expect(error).toBeInstanceOf(EnqueueValidationError);
    expect(error).toMatchObject({ code: AwaErrorCodes.enqueueValidation, ...expected });
    if (!expected.field) expect(error).toMatchObject({ field: 'unique.states', message: STATES_MESSAGE });
    expect(await count()).toBe(before);
  });

  it('accepts the boundaries: 20 tags of 100 characters, a key of 200, the terminal states', async () => {
    const tags = Array.from({ length: 20 }, (_, i) => `${i}`.padEnd(100, 't'));
    const states = ['cancelled', 'scheduled', 'available', 'running', 'retryable', 'completed', 'failed'] as const;
    const job = await producer.enqueue('x.ok', {}, { tags, unique: { key: 'k'.repeat(200), states: [...states] } });
    const [row] = await dataSource.query('SELECT tags, unique_states FROM awa.all_jobs WHERE id = $1', [job.id]);
    expect(row.tags).toEqual(tags);
    // Stored in JOB_STATES order; `waiting` is not a unique state (workflow jobs are never unique).
    expect(row.unique_states).toEqual(JOB_STATES.filter((s) => s !== 'waiting'));
  });
});
