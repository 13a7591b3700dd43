import { QueueProducer } from 'nestjs-awa';
import { DataSource } from 'typeorm';
import { useTestApp } from '../support/block-app.js';

/** Tags given at enqueue are stored in jobs.tags, on the plain and on the unique insert path. */
describe('QueueProducer tags', () => {
  const block = useTestApp({});
  let producer: QueueProducer;
  let dataSource: DataSource;

  beforeAll(() => {
    producer = block.app.get(QueueProducer);
    dataSource = block.app.get(DataSource);
  });

  it('stores the tags of a job, and none by default', async () => {
    const tagged = await producer.enqueue('t.one', {}, { tags: ['billing', 'user:42', 'ünïcode ✓'] });
    const plain = await producer.enqueue('t.one', {});
    const empty = await producer.enqueue('t.one', {}, { tags: [] });
    expect((await producer.getJob(tagged.id))?.tags).toEqual(['billing', 'user:42', 'ünïcode ✓']);
    expect((await producer.getJob(plain.id))?.tags).toEqual([]);
    expect((await producer.getJob(empty.id))?.tags).toEqual([]);
  });

  it('stores per-item tags in enqueueMany, with and without unique items in the batch', async () => {
    const plainBatch = await producer.enqueueMany([
      { kind: 't.many', args: {}, tags: ['a'] },
      { kind: 't.many', args: {} },
      { kind: 't.many', args: {}, tags: ['b', 'c'] },
    ]);
    const uniqueBatch = await producer.enqueueMany([
      { kind: 't.many.u', args: {}, tags: ['u'], unique: {} },
      { kind: 't.many', args: {}, tags: ['d'] },
    ]);
    const tagsOf = async (id: string) => (await producer.getJob(id))?.tags;
    expect(await Promise.all(plainBatch.map((j) => tagsOf(j.id)))).toEqual([['a'], [], ['b', 'c']]);
    expect(await Promise.all(uniqueBatch.map((j) => tagsOf(j.id)))).toEqual([['u'], ['d']]);
  });

  it('tagged jobs can be found through the tags index', async () => {
    await producer.enqueue('t.find', {}, { tags: ['needle', 'other'] });
    await producer.enqueue('t.find', {}, { tags: ['other'] });
    const rows = await dataSource.query(`SELECT count(*)::int AS n FROM awa.all_jobs WHERE tags @> ARRAY['needle']`);
    expect(rows[0].n).toBe(1);
  });
});
