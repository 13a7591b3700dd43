import * as testingSql from '../../lib/testing/testing.sql.js';
import { seedJob } from '../support/job-factory.js';
import { statementsOf, useSqlFixture } from '../sql/sql-fixture.js';

/** The test helpers' statements (AwaTesting). */
describe('testing.sql', () => {
  const f = useSqlFixture();

  describe('makeWaitingJobsDue', () => {
    it('makes future scheduled and retryable jobs of the queue and kinds due, and nothing else', async () => {
      const hour = 3_600_000;
      const scheduled = await seedJob(f.sql, { kind: 'a', state: 'scheduled', runAtMs: hour });
      const retryable = await seedJob(f.sql, { kind: 'b', state: 'retryable', runAtMs: hour });
      await seedJob(f.sql, { kind: 'c', state: 'scheduled', runAtMs: hour }); // another kind
      await seedJob(f.sql, { kind: 'a', queue: 'other', state: 'scheduled', runAtMs: hour }); // another queue
      await seedJob(f.sql, { kind: 'a', state: 'scheduled', runAtMs: -hour }); // due already
      await seedJob(f.sql, { kind: 'a', state: 'completed', runAtMs: hour, finalizedAtMs: 0 });

      const rows = await f.run(testingSql.makeWaitingJobsDue, ['default', ['a', 'b']]);
      expect(rows.map((r) => r.id).sort()).toEqual([scheduled, retryable].sort());
      const future = await f.sql(`SELECT kind, queue, state FROM awa.all_jobs WHERE run_at > now() ORDER BY id`);
      expect(future).toEqual([
        { kind: 'c', queue: 'default', state: 'scheduled' },
        { kind: 'a', queue: 'other', state: 'scheduled' },
        { kind: 'a', queue: 'default', state: 'completed' },
      ]);
    });
  });

  describe('findJobs', () => {
    it('filters by state, kind, queue and args containment, oldest first, up to the limit', async () => {
      const first = await seedJob(f.sql, { kind: 'k', args: { user: { id: 1, tags: ['x', 'y'] } } });
      const second = await seedJob(f.sql, {
        kind: 'k',
        state: 'scheduled',
        runAtMs: 60_000,
        args: { user: { id: 2 } },
      });
      await seedJob(f.sql, { kind: 'k', queue: 'q2', args: { user: { id: 1 } } });
      await seedJob(f.sql, { kind: 'other', args: {} });
      await seedJob(f.sql, { kind: 'k', state: 'completed', finalizedAtMs: 0, args: {} });
      const ids = async (...params: Parameters<typeof find>) => (await find(...params)).map((r) => r.id);
      const find = (kind: string | null, queue: string | null, args: string | null, limit = 100) =>
        f.run(testingSql.findJobs, [['available', 'scheduled'], kind, queue, args, limit]);

      expect(await ids('k', 'default', null)).toEqual([first, second]);
      expect(await ids('k', 'default', null, 1)).toEqual([first]);
      expect(await ids(null, 'default', '{"user":{"tags":["y"]}}')).toEqual([first]);
      expect(await ids('k', null, '{"user":{"id":1}}')).toHaveLength(2);
      const [row] = await find('k', 'default', '{"user":{"id":2}}');
      expect(row).toMatchObject({
        id: second,
        kind: 'k',
        queue: 'default',
        state: 'scheduled',
        args: { user: { id: 2 } },
      });
    });
  });

  it('ran every statement of testing.sql', () => {
    expect(
      statementsOf(testingSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
