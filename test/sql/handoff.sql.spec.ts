import { AWA_HANDOFF_CHANNEL } from '../../lib/awa.constants.js';
import { handoffSql } from '../../lib/sql/index.js';
import type { SqlParams } from '../../lib/sql/sql-statement.js';
import { handedOffJob } from '../../lib/worker/handed-off-job.js';
import { asRoleOwningNothing, execOn, leasesOf, listen, readJob, statementsOf, useSqlFixture } from './sql-fixture.js';

/** The handoff's statements (docs/handoff.md): a worker's offer, its withdrawal, and the enqueue that takes it. */
describe('handoff.sql', () => {
  const f = useSqlFixture();

  const instance = (id: string) =>
    f.sql(`INSERT INTO awa.instances (id, hostname, pid, lock_key) VALUES ($1, 'host', 1, 1)`, [id]);
  const offer = (instanceId: string, kinds = ['k'], queue = 'default', deadlineMs = 60_000) =>
    f.run(handoffSql.offerWorker, [queue, instanceId, kinds, deadlineMs]);
  const offers = async () =>
    (await f.sql('SELECT queue, instance_id, kinds FROM awa.worker_offers ORDER BY instance_id')) as Array<{
      queue: string;
      instance_id: string;
      kinds: string[];
    }>;
  const params = (
    kind = 'k',
    args: unknown = { n: 1 },
    queue = 'default',
  ): SqlParams<typeof handoffSql.insertHandedOff> => [kind, queue, JSON.stringify(args), 2, 5, '["t1"]', null];
  const enqueue = (kind = 'k', args: unknown = { n: 1 }, queue = 'default', on?: Parameters<typeof f.run>[2]) =>
    f.run(handoffSql.insertHandedOff, params(kind, args, queue), on);

  it('an offer is one row per worker of a queue: offering again renews it, withdrawing deletes it', async () => {
    await instance('w1');
    await offer('w1', ['a']);
    await offer('w1', ['a', 'b']);
    expect(await offers()).toEqual([{ queue: 'default', instance_id: 'w1', kinds: ['a', 'b'] }]);
    await f.run(handoffSql.withdrawOffer, ['default', 'w1']);
    expect(await offers()).toEqual([]);
  });

  it('an offer goes with its instance: deleting the instance row deletes its offers', async () => {
    await instance('w1');
    await offer('w1');
    await f.sql(`DELETE FROM awa.instances WHERE id = 'w1'`);
    expect(await offers()).toEqual([]);
  });

  it('without an offer the job goes in available, as insertJobs inserts it', async () => {
    const [row] = await enqueue();
    expect(row).toEqual({ id: expect.any(String), handed: false });
    const job = await readJob(f.sql, row!.id);
    expect(job).toMatchObject({ state: 'available', attempt: 0, kind: 'k', priority: 2 });
    expect(await leasesOf(f.sql, row!.id)).toEqual([]);
  });

  it('takes an offer: the job goes in running, leased to the offer’s instance, and that instance is sent the job', async () => {
    await instance('w1');
    await offer('w1', ['k'], 'default', 60_000);
    const client = await f.client();
    const heard = await listen(client, AWA_HANDOFF_CHANNEL);
    const [row] = await enqueue('k', { n: 7 });
    expect(row?.handed).toBe(true);
    const [stored] = (await f.sql(
      `SELECT j.state, j.attempt, j.run_lease::text, j.attempted_at = j.created_at AS attempted_at_insert, j.tags,
              l.instance_id, l.run_lease::text AS lease, round(extract(epoch FROM l.deadline_at - l.claimed_at)) AS deadline_s
         FROM awa.jobs j JOIN awa.active_leases l ON l.job_id = j.id WHERE j.id = $1`,
      [row!.id],
    )) as Array<Record<string, unknown>>;
    expect(stored).toMatchObject({
      state: 'running',
      attempt: 1,
      attempted_at_insert: true,
      tags: ['t1'],
      instance_id: 'w1',
      deadline_s: '60',
    });
    expect(stored!.lease).toBe(stored!.run_lease);
    expect(await offers()).toEqual([]); // taken: one offer, one job

    const [payload] = await heard.take(execOn(client));
    expect(handedOffJob(payload!, 'w2')).toBeUndefined(); // another instance's
    expect(handedOffJob(payload!, 'w1')).toMatchObject({
      id: row!.id,
      kind: 'k',
      queue: 'default',
      args: { n: 7 },
      attempt: 1,
      max_attempts: 5,
      priority: 2,
      run_lease: stored!.run_lease,
      traceparent: null,
      workflow_id: null,
    });
  });

  it('takes no offer of another queue, of other kinds, nor of a paused or held queue', async () => {
    await instance('w1');
    await offer('w1', ['other-kind']);
    await offer('w1', ['k'], 'other-queue');
    expect((await enqueue('k'))[0]?.handed).toBe(false);

    await offer('w1', ['k']);
    await f.sql(`INSERT INTO awa.queues (name, paused_at) VALUES ('default', now())`);
    expect((await enqueue('k'))[0]?.handed).toBe(false);
    await f.sql(
      `UPDATE awa.queues SET paused_at = NULL, held_until = now() + interval '1 minute' WHERE name = 'default'`,
    );
    expect((await enqueue('k'))[0]?.handed).toBe(false);
    await f.sql(`UPDATE awa.queues SET held_until = NULL WHERE name = 'default'`);
    expect((await enqueue('k'))[0]?.handed).toBe(true);
    await f.sql(`DELETE FROM awa.queues`);
  });

  it('concurrent enqueues take different offers (SKIP LOCKED): one offer hands over one job', async () => {
    await instance('w1');
    await offer('w1');
    const a = await f.client();
    const b = await f.client();
    await a.query('BEGIN');
    await b.query('BEGIN');
    try {
      const [first] = await enqueue('k', {}, 'default', a);
      const [second] = await enqueue('k', {}, 'default', b); // skips the offer a holds, does not wait for it
      expect([first?.handed, second?.handed]).toEqual([true, false]);
    } finally {
      await a.query('COMMIT');
      await b.query('COMMIT');
    }
  });

  it("handedOffJobsOf: the running jobs handed to an instance, not its claimed ones nor another's", async () => {
    await instance('w1');
    await instance('w2');
    await offer('w1');
    const [handed] = await enqueue('k', { n: 3 });
    await offer('w2');
    await enqueue('k'); // w2's
    // A job claimed by w1: attempted in a later transaction than its insert.
    const [claimed] = await enqueue('k');
    await f.sql(
      `WITH c AS (UPDATE awa.jobs SET state = 'running', attempt = 1, run_lease = 5, attempted_at = clock_timestamp()
                   WHERE id = $1 RETURNING id)
       INSERT INTO awa.active_leases (job_id, run_lease, instance_id) SELECT id, 5, 'w1' FROM c`,
      [claimed!.id],
    );
    const rows = await f.run(handoffSql.handedOffJobsOf, ['w1']);
    expect(rows).toEqual([
      expect.objectContaining({
        id: handed!.id,
        kind: 'k',
        queue: 'default',
        args: { n: 3 },
        attempt: 1,
        workflow_id: null,
      }),
    ]);
  });

  describe('insertHandedOffFlushedLater, then flushHandedOff on the same session', () => {
    /** The session's settings that the pair reads and sets, as that session sees them. */
    const settingsOf = async (client: Awaited<ReturnType<typeof f.client>>) =>
      (
        await client.query<{ sync: string; due: string | null }>(
          `SELECT current_setting('synchronous_commit') AS sync, current_setting('awa.handoff_flush_due', true) AS due`,
        )
      ).rows[0];

    it('a handed job: committed without waiting for the flush, then the flush is due and made, past the job’s commit', async () => {
      await instance('w1');
      await offer('w1');
      const client = await f.client();
      const [row] = await f.run(handoffSql.insertHandedOffFlushedLater, params('k', { n: 2 }), client);
      expect(row?.handed).toBe(true);
      // The insert's transaction only: the session commits synchronously again, and owes a flush.
      expect(await settingsOf(client)).toEqual({ sync: 'on', due: 'on' });
      const [{ lsn: committedAt }] = (await client.query(`SELECT pg_current_wal_insert_lsn()::text AS lsn`)).rows;
      expect(await f.run(handoffSql.flushHandedOff, [], client)).toEqual([expect.objectContaining({ flushed: true })]);
      const [{ durable }] = (
        await client.query(`SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn AS durable`, [committedAt])
      ).rows;
      expect(durable).toBe(true);
      expect((await settingsOf(client))?.due).toBe('');
      expect(await readJob(f.sql, row!.id)).toMatchObject({ state: 'running', attempt: 1 });
    });

    it('a job inserted available, or a handed insert rolled back, owes no flush: the flush writes nothing', async () => {
      const client = await f.client();
      const [row] = await f.run(handoffSql.insertHandedOffFlushedLater, params(), client);
      expect(row?.handed).toBe(false);
      expect(await settingsOf(client)).toEqual({ sync: 'on', due: null });
      expect(await f.run(handoffSql.flushHandedOff, [], client)).toEqual([expect.objectContaining({ flushed: false })]);

      // A handed insert whose transaction is rolled back (here by the client) takes its settings with it.
      await instance('w1');
      await offer('w1');
      await client.query('BEGIN');
      expect((await f.run(handoffSql.insertHandedOffFlushedLater, params(), client))[0]?.handed).toBe(true);
      expect((await settingsOf(client))?.due).toBe('on');
      await client.query('ROLLBACK');
      expect(await settingsOf(client)).toEqual({ sync: 'on', due: '' }); // the setting is known now, and empty
      expect(await f.run(handoffSql.flushHandedOff, [], client)).toEqual([expect.objectContaining({ flushed: false })]);
    });

    it('the flush needs no privilege beyond the schema’s use (a role owning nothing)', async () => {
      await asRoleOwningNothing(f, async (client) => {
        await client.query(`SELECT set_config('awa.handoff_flush_due', 'on', false)`);
        expect(await f.run(handoffSql.flushHandedOff, [], client)).toEqual([
          expect.objectContaining({ flushed: true }),
        ]);
      });
    });
  });

  it('every statement of the module ran in this file', () => {
    expect(
      statementsOf(handoffSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});
