import { DataSource } from 'typeorm';
import { flowSql } from '../../lib/sql/index.js';
import { AwaClaimWorkflowId1765000000000, AwaKeyedReady1764700000000 } from '../../migrations/index.js';
import type { FlowClaimRow } from '../../lib/sql/flow.sql.js';
import { useSqlFixture } from '../sql/sql-fixture.js';
import { resetFlow, seedKeyed } from './flow-fixture.js';

/**
 * A key leaves the keyed claim's ready set only when it has no available job at all: not when the
 * claiming instance's kinds cannot see its jobs, and not when another transaction has them locked.
 */
describe('a keyed claim that cannot see all of a key’s jobs', () => {
  const f = useSqlFixture();
  beforeEach(() => resetFlow(f.sql));

  const claim = (kinds: string[], want = 5, keyLimit = 1) =>
    f.run(flowSql.claimFlowJobs, ['q', kinds, want, 'instance-a', 0, 0, 0, keyLimit, 0]);
  const ids = (rows: FlowClaimRow[]) => rows.filter((r) => r.id !== null).map((r) => r.id);
  const keyRow = async (key: string) =>
    (
      await f.sql(`SELECT has_waiting, last_claimed_at > '-infinity' AS visited FROM awa.flow_keys WHERE key = $1`, [
        key,
      ])
    )[0];

  it('leaves a key of another kind waiting, for a claim that handles that kind', async () => {
    const [other] = await seedKeyed(f.sql, 'a', 1, { kind: 'kind.b' });
    expect(ids(await claim(['kind.a']))).toEqual([]);
    // Still ready, and moved behind the keys this instance can serve (round-robin).
    expect(await keyRow('a')).toEqual({ has_waiting: true, visited: true });
    expect(ids(await claim(['kind.b']))).toEqual([other]);
  });

  it('serves its own keys although keys of another kind are older in the round-robin', async () => {
    await seedKeyed(f.sql, 'foreign', 1, { kind: 'kind.b' });
    const [own] = await seedKeyed(f.sql, 'own', 1, { kind: 'kind.a' });
    // One slot: the first claim may visit the foreign key first; the next one reaches the own key.
    const taken = [...ids(await claim(['kind.a'], 1)), ...ids(await claim(['kind.a'], 1))];
    expect(taken).toEqual([own]);
  });

  it('claims a job after the transaction that row-locked it during a claim commits', async () => {
    const [id] = await seedKeyed(f.sql, 'a', 1, { kind: 'kind.a' });
    const locker = await f.client();
    await locker.query('BEGIN');
    try {
      await locker.query('SELECT id FROM awa.jobs WHERE id = $1 FOR UPDATE', [id]);
      expect(ids(await claim(['kind.a']))).toEqual([]);
      expect((await keyRow('a')).has_waiting).toBe(true);
    } finally {
      await locker.query('COMMIT');
    }
    expect(ids(await claim(['kind.a']))).toEqual([id]);
  });

  it('takes a key out of the ready set once it truly has no available job', async () => {
    await seedKeyed(f.sql, 'a', 1, { kind: 'kind.a' });
    const [other] = await seedKeyed(f.sql, 'a', 1, { kind: 'kind.b' });
    // Free slots: each claim reads more jobs of the key than it finds of its kind.
    expect(ids(await claim(['kind.a'], 5, 3))).toHaveLength(1);
    expect((await keyRow('a')).has_waiting).toBe(true); // kind.b's job still waits
    expect(ids(await claim(['kind.b'], 5, 3))).toEqual([other]);
    // Nothing available is left (the jobs just claimed do not count).
    expect((await keyRow('a')).has_waiting).toBe(false);
  });

  it('migration AwaKeyedReady marks stranded keys waiting again; its down() puts the shipped claim back', async () => {
    const dataSource = await new DataSource({ type: 'postgres', url: f.url, logging: false }).initialize();
    const runner = dataSource.createQueryRunner();
    const migration = new AwaKeyedReady1764700000000();
    // Reverted in order: the later claim's return type differs (AwaClaimWorkflowId), so it goes first.
    const later = new AwaClaimWorkflowId1765000000000();
    // Unprepared: the function's result type changes under the pool's prepared statements.
    const claim = (kinds: string[]) =>
      f.sql(flowSql.claimFlowJobs.text, ['q', kinds, 5, 'instance-a', 0, 0, 0, 1, 0]) as Promise<FlowClaimRow[]>;
    try {
      await later.down(runner);
      await migration.down(runner);
      await seedKeyed(f.sql, 'flagged', 1, { kind: 'kind.b' });
      await seedKeyed(f.sql, 'deleted', 1, { kind: 'kind.b' });
      // The shipped claim clears the flags of both keys it cannot serve; the cleanup deletes a row.
      expect(ids(await claim(['kind.a']))).toEqual([]);
      expect(await f.sql(`SELECT count(*)::int AS n FROM awa.flow_keys WHERE has_waiting`)).toEqual([{ n: 0 }]);
      await f.sql(`DELETE FROM awa.flow_keys WHERE key = 'deleted'`);
      await migration.up(runner);
      const keys = await f.sql(`SELECT key, has_waiting FROM awa.flow_keys ORDER BY key`);
      expect(keys).toEqual([
        { key: 'deleted', has_waiting: true },
        { key: 'flagged', has_waiting: true },
      ]);
      expect(ids(await claim(['kind.b']))).toHaveLength(2);
      await later.up(runner);
    } finally {
      await runner.release();
      await dataSource.destroy();
    }
  });
});
