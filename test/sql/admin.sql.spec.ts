import type pg from 'pg';
import { compileFilter, type JobFilter } from '../../lib/admin/job-filter.js';
import { adminBatchSql, adminFilterSql, adminSql, queueCountsSql } from '../../lib/sql/index.js';
import { FIRST_CURSOR } from '../../lib/sql/admin.sql.js';
import { seedJob, seedRunning } from '../support/job-factory.js';
import { claimer, listen, statementsOf, useSqlFixture } from './sql-fixture.js';
import { planNodes, type PlanNode, explainedPlan, readsOf } from '../support/query-plan.js';

/** QueueAdmin's statements: queue pause, states, one job, listings and the bulk batches. */
describe('admin.sql', () => {
  const f = useSqlFixture();
  beforeEach(async () => {
    await f.sql('TRUNCATE awa.queues');
  });
  const stateOf = async (id: string) => (await f.sql('SELECT state FROM awa.all_jobs WHERE id = $1', [id]))[0]?.state;
  /** A filter's statement and values as QueueAdmin builds them. */
  const filtered = (filter: JobFilter) => compileFilter(filter);
  const claim = (queue: string) => claimer(f)(queue, ['k'], 10);

  describe('pauseQueue and resumeQueue', () => {
    it('a paused queue is not claimed from, a resumed one is, and each NOTIFYs awa_control', async () => {
      const client = await f.client();
      const control = await listen(client, 'awa_control');
      const id = await seedJob(f.sql, { queue: 'q' });
      expect(await f.run(adminSql.pauseQueue, ['q'])).toEqual([{ notified: 1 }]);
      expect(await claim('q')).toEqual([]);
      expect(await stateOf(id)).toBe('available');
      expect(await f.run(adminSql.resumeQueue, ['q'])).toEqual([{ resumed: 1, notified: 1 }]);
      expect((await claim('q')).map((r) => r.id)).toEqual([id]);
      // Resuming a queue that is not paused changes nothing, and wakes the workers all the same.
      expect(await f.run(adminSql.resumeQueue, ['q'])).toEqual([{ resumed: 0, notified: 1 }]);
      expect(await control.take(f.sql)).toEqual(['pause:q', 'resume:q', 'resume:q']);
    });

    it('a second pause keeps the first pause time; other queues are not paused', async () => {
      await f.run(adminSql.pauseQueue, ['q']);
      const [first] = await f.sql(`SELECT paused_at FROM awa.queues WHERE name = 'q'`);
      await f.run(adminSql.pauseQueue, ['q']);
      const [second] = await f.sql(`SELECT paused_at FROM awa.queues WHERE name = 'q'`);
      expect(second.paused_at).toEqual(first.paused_at);
      const id = await seedJob(f.sql, { queue: 'other' });
      expect((await claim('other')).map((r) => r.id)).toEqual([id]);
    });
  });

  it('queueWaitingCounts counts the unfinished states, and lists queues with jobs, with a row, or asked for', async () => {
    await seedJob(f.sql, { queue: 'a', state: 'available', runAtMs: -5_000 });
    await seedJob(f.sql, { queue: 'a', state: 'scheduled', runAtMs: 60_000 });
    await seedRunning(f.sql, { queue: 'd' });
    await seedJob(f.sql, { queue: 'a', state: 'failed', finalizedAtMs: 0 });
    await f.run(adminSql.pauseQueue, ['b']);
    const rows = await f.run(queueCountsSql.queueWaitingCounts, [['c', 'a']]);
    expect(rows.map((r) => [r.name, r.state, r.count, r.paused_at !== null])).toEqual([
      ['a', 'available', 1, false],
      ['a', 'scheduled', 1, false],
      ['b', null, 0, true],
      ['c', null, 0, false],
      ['d', 'running', 1, false],
    ]);
    expect(rows[0]!.oldest_available_ms).toBeGreaterThanOrEqual(5_000);
  });

  it('finishedSample counts finished jobs per queue and state, each sample stopping at its cap', async () => {
    for (const [queue, state] of [
      ['a', 'completed'],
      ['a', 'completed'],
      ['a', 'failed'],
      ['b', 'cancelled'],
    ])
      await seedJob(f.sql, { queue, state, finalizedAtMs: 0 });
    await seedJob(f.sql, { queue: 'a', state: 'available' });
    const rows = await f.run(queueCountsSql.finishedSample, [10, 10]);
    expect(rows).toEqual([
      { sample: 'cancelled', queue: 'b', state: 'cancelled', count: 1, total: 1 },
      { sample: 'failed', queue: 'a', state: 'failed', count: 1, total: 1 },
      { sample: 'finished', queue: 'a', state: 'completed', count: 2, total: 4 },
      { sample: 'finished', queue: 'a', state: 'failed', count: 1, total: 4 },
      { sample: 'finished', queue: 'b', state: 'cancelled', count: 1, total: 4 },
    ]);
    const capped = await f.run(queueCountsSql.finishedSample, [2, 10]);
    expect(new Set(capped.filter((r) => r.sample === 'finished').map((r) => r.total))).toEqual(new Set([2]));
    expect(capped.filter((r) => r.sample !== 'finished')).toEqual(rows.filter((r) => r.sample !== 'finished'));
  });

  it('estimateJobs gives the planner estimate of a queue in a state, from the statistics', async () => {
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, finalized_at)
                 SELECT 'k', CASE WHEN i % 4 = 0 THEN 'small' ELSE 'big' END, 'completed', now()
                   FROM generate_series(1, 20000) i`);
    await f.sql('ANALYZE awa.jobs');
    const rows = await f.run(queueCountsSql.estimateJobs, [
      ['big', 'small'],
      ['completed', 'completed'],
    ]);
    expect(rows.map((r) => [r.queue, r.state])).toEqual([
      ['big', 'completed'],
      ['small', 'completed'],
    ]);
    expect(rows[0]!.estimate).toBeGreaterThan(15_000 * 0.8);
    expect(rows[0]!.estimate).toBeLessThan(15_000 * 1.2);
    expect(rows[1]!.estimate).toBeGreaterThan(5_000 * 0.8);
    expect(rows[1]!.estimate).toBeLessThan(5_000 * 1.2);
  });

  describe('one job', () => {
    it('retryJob retries a finished job, NOTIFYs its queue, and reports the state of others', async () => {
      const failed = await seedJob(f.sql, { queue: 'q', state: 'failed', attempt: 2, finalizedAtMs: 0 });
      const waiting = await seedJob(f.sql, { state: 'scheduled', runAtMs: 60_000 });
      expect(await f.run(adminSql.retryJob, [failed])).toEqual([{ state: 'failed', queue: 'q', notified: 1 }]);
      expect(await f.run(adminSql.retryJob, [waiting])).toEqual([{ state: 'scheduled', queue: null, notified: 0 }]);
      expect(await f.run(adminSql.retryJob, ['424242'])).toEqual([]);
      const [row] = await f.sql('SELECT state, attempt, finalized_at FROM awa.all_jobs WHERE id = $1', [failed]);
      expect(row).toEqual({ state: 'available', attempt: 0, finalized_at: null });
    });

    it('uniqueHolder names the job that holds the key of another', async () => {
      const holder = await seedJob(f.sql, { state: 'available' });
      const old = await seedJob(f.sql, { state: 'failed', finalizedAtMs: 0 });
      await f.sql(`UPDATE awa.jobs SET unique_key = 'u', unique_states = '{available}' WHERE id IN ($1, $2)`, [
        holder,
        old,
      ]);
      expect(await f.run(adminSql.uniqueHolder, [old])).toEqual([{ id: holder }]);
      await f.sql(`UPDATE awa.jobs SET state = 'completed' WHERE id = $1`, [holder]);
      expect(await f.run(adminSql.uniqueHolder, [old])).toEqual([]);
    });

    it('deleteJob deletes a job unless it is running', async () => {
      const done = await seedJob(f.sql, { state: 'cancelled', finalizedAtMs: 0 });
      const { id: running } = await seedRunning(f.sql);
      expect(await f.run(adminSql.deleteJob, [done])).toEqual([{ state: 'cancelled', deleted: true }]);
      expect(await f.run(adminSql.deleteJob, [running])).toEqual([{ state: 'running', deleted: false }]);
      expect(await f.run(adminSql.deleteJob, [done])).toEqual([]);
      expect(await stateOf(running)).toBe('running');
    });
  });

  describe('over a filter', () => {
    it('listJobs returns matching jobs with id <= cursor, newest first; countJobs stops at its cap', async () => {
      const ids = [];
      for (let i = 0; i < 5; i++) ids.push(await seedJob(f.sql, { queue: i % 2 ? 'odd' : 'even' }));
      const even = filtered({ queues: ['even'] });
      const list = (cursor: string, limit: number) =>
        f.run(adminFilterSql.listJobs(even), [limit, cursor, ...even.values]).then((rows) => rows.map((r) => r.id));
      expect(await list(FIRST_CURSOR, 10)).toEqual([ids[4], ids[2], ids[0]]);
      expect(await list(ids[2]!, 1)).toEqual([ids[2]]);
      expect(await f.run(adminFilterSql.countJobs(even), [10, ...even.values])).toEqual([{ count: 3 }]);
      expect(await f.run(adminFilterSql.countJobs(even), [2, ...even.values])).toEqual([{ count: 2 }]);
    });

    it('retryBatch retries finished matches below the cursor, NOTIFYs queues, and skips held unique keys', async () => {
      const unique = (id: string, key: string) =>
        f.sql(`UPDATE awa.jobs SET unique_key = $2, unique_states = '{available}' WHERE id = $1`, [id, key]);
      const holder = await seedJob(f.sql, { queue: 'q1', state: 'available' });
      const a = await seedJob(f.sql, { queue: 'q1', state: 'failed', finalizedAtMs: 0 });
      const b = await seedJob(f.sql, { queue: 'q2', state: 'completed', finalizedAtMs: 0 });
      const free = await seedJob(f.sql, { queue: 'q2', state: 'failed', finalizedAtMs: 0 });
      const held = await seedJob(f.sql, { queue: 'q2', state: 'failed', finalizedAtMs: 0 });
      const older = await seedJob(f.sql, { queue: 'q2', state: 'cancelled', finalizedAtMs: 0 });
      const newer = await seedJob(f.sql, { queue: 'q2', state: 'failed', finalizedAtMs: 0 });
      const running = (await seedRunning(f.sql, { queue: 'q1' })).id;
      await unique(holder, 'held');
      await unique(held, 'held');
      await unique(free, 'free');
      await unique(older, 'twice');
      await unique(newer, 'twice');
      const jobs = await listen(await f.client(), 'awa_jobs');
      const all = filtered({});
      const [batch] = await f.run(adminBatchSql.retryBatch(all), [FIRST_CURSOR, 10, ...all.values]);
      expect(batch).toMatchObject({ picked: 6, last_id: a, changed: 4, skipped: 2 });
      expect([...batch!.queues].sort()).toEqual(['q1', 'q2']);
      const states = await Promise.all([a, b, free, held, older, newer, running].map(stateOf));
      expect(states).toEqual(['available', 'available', 'available', 'failed', 'cancelled', 'available', 'running']);
      expect((await jobs.take(f.sql)).sort()).toEqual(['q1', 'q2']);
    });

    it('a batch takes at most its size, from the cursor down', async () => {
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push(await seedJob(f.sql, { state: 'failed', finalizedAtMs: 0 }));
      const failed = filtered({ states: ['failed'] });
      const [batch] = await f.run(adminBatchSql.retryBatch(failed), [ids[1]!, 1, ...failed.values]);
      expect(batch).toMatchObject({ picked: 1, last_id: ids[1], changed: 1 });
      expect(await Promise.all(ids.map(stateOf))).toEqual(['failed', 'available', 'failed']);
    });

    it('cancelBatch cancels waiting matches and flags running ones, NOTIFYing awa_cancel', async () => {
      const client = await f.client();
      const cancels = await listen(client, 'awa_cancel');
      const waiting = await seedJob(f.sql, { state: 'retryable', runAtMs: 60_000 });
      const { id: running } = await seedRunning(f.sql);
      const done = await seedJob(f.sql, { state: 'completed', finalizedAtMs: 0 });
      const all = filtered({});
      const [batch] = await f.run(adminBatchSql.cancelBatch(all), [FIRST_CURSOR, 10, 'cancelled here', ...all.values]);
      expect(batch).toEqual({ picked: 2, last_id: waiting, cancelled: 1, signalled: 1 });
      const [row] = await f.sql(`SELECT state, errors -> -1 ->> 'error' AS error FROM awa.all_jobs WHERE id = $1`, [
        waiting,
      ]);
      expect(row).toEqual({ state: 'cancelled', error: 'cancelled here' });
      expect(await stateOf(done)).toBe('completed');
      expect(await cancels.take(f.sql)).toEqual([running]);
    });

    it('deleteBatch deletes matches that are not running and flags running ones', async () => {
      const done = await seedJob(f.sql, { state: 'completed', finalizedAtMs: 0 });
      const { id: running } = await seedRunning(f.sql);
      const all = filtered({});
      const [batch] = await f.run(adminBatchSql.deleteBatch(all), [FIRST_CURSOR, 10, ...all.values]);
      expect(batch).toEqual({ picked: 2, last_id: done, deleted: 1, signalled: 1 });
      expect(await stateOf(done)).toBeUndefined();
      const [lease] = await f.sql('SELECT cancel_requested FROM awa.active_leases WHERE job_id = $1', [running]);
      expect(lease.cancel_requested).toBe(true);
    });
  });

  it('every statement of admin.sql.ts ran in this file', () => {
    expect(
      statementsOf(adminSql)
        .map((s) => s.name)
        .filter((n) => !f.executed.has(n)),
    ).toEqual([]);
  });
});

/** The scans of awa.jobs in a plan, as "<node type> using <index>". */
const jobScans = (plan: PlanNode) =>
  readsOf(plan, 'jobs').map((n) => `${n['Node Type']} using ${n['Index Name'] ?? '-'}`);

/**
 * Every index of awa.jobs a plan uses. The finished jobs seeded below stay in awa.jobs, as unique-held
 * ones do; the plans over awa.job_history's partitions (empty here) are the dashboard EXPLAIN test's.
 */
const indexesUsed = (plan: PlanNode) =>
  [...new Set(planNodes(plan).flatMap((n) => n['Index Name'] ?? []))]
    .filter((i) => !i.startsWith('job_history_'))
    .sort();

/**
 * The listings and batches read awa.jobs through an index, and a deep page reads no more rows than
 * the first. 60,000 jobs, mostly completed, as a used queue holds them; real statistics, and the
 * planner's own choices. Custom plans (planned for the values): a generic plan cannot know the
 * LIMIT, so it costs more than the custom ones, and PostgreSQL keeps planning these per call.
 */
describe('admin query plans', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  beforeAll(async () => {
    client = await f.client();
    await f.sql(`INSERT INTO awa.jobs (kind, queue, state, run_at, finalized_at, tags)
                 SELECT 'k' || (i % 5), 'q' || (i % 3), s.state, now(),
                        CASE WHEN s.state IN ('completed', 'failed', 'cancelled') THEN now() END,
                        CASE WHEN i % 100 = 0 THEN '{vip}'::text[] ELSE '{}' END
                   FROM generate_series(1, 60000) i
                  CROSS JOIN LATERAL (SELECT CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 50 = 1 THEN 'available'
                                                  ELSE 'completed' END AS state) s`);
    await f.sql('ANALYZE awa.jobs');
  });

  /** A value as an SQL literal, for EXECUTE (which takes no bound parameters). */
  const literal = (value: unknown): string => {
    if (Array.isArray(value)) return literal(`{${value.map((v) => `"${String(v)}"`).join(',')}}`);
    const text = value instanceof Date ? value.toISOString() : String(value);
    return `'${text.replace(/'/g, "''")}'`;
  };

  /** The custom plan of a prepared statement for these values, as its executions get it. */
  async function explain(text: string, values: unknown[], analyze = false): Promise<PlanNode> {
    await client.query('BEGIN');
    try {
      await client.query('SET LOCAL plan_cache_mode = force_custom_plan');
      await client.query(`PREPARE awa_explained AS ${text}`);
      const { rows } = await client.query(
        `EXPLAIN (FORMAT JSON${analyze ? ', ANALYZE' : ''}) EXECUTE awa_explained(${values.map(literal).join(', ')})`,
      );
      return explainedPlan(rows);
    } finally {
      await client.query('ROLLBACK');
      await client.query('DEALLOCATE ALL');
    }
  }
  const listPlan = (filter: JobFilter, cursor: string, analyze = false) => {
    const compiled = compileFilter(filter);
    return explain(adminFilterSql.listJobs(compiled).text, [51, cursor, ...compiled.values], analyze);
  };
  const noSeqScan = (plan: PlanNode) => expect(jobScans(plan).filter((s) => s.startsWith('Seq Scan'))).toEqual([]);

  it('listJobs by state and queue reads an index, never the table', async () => {
    const plan = await listPlan({ states: ['failed'], queues: ['q1'] }, FIRST_CURSOR);
    noSeqScan(plan);
    // One job in 150 matches: with the (queue, state) statistics (migration AwaQueueCountEstimates)
    // the planner may find walking the primary key to the 51st match as cheap as the state index.
    expect([['jobs_admin_state_idx'], ['jobs_pkey']]).toContainEqual(indexesUsed(plan));
  });

  it('listJobs of completed jobs walks the primary key', async () => {
    const plan = await listPlan({ states: ['completed'] }, FIRST_CURSOR);
    expect(jobScans(plan)).toEqual(['Index Scan using jobs_pkey']);
  });

  it('listJobs by tag uses jobs_tags_idx', async () => {
    const plan = await listPlan({ tags: ['vip'] }, FIRST_CURSOR);
    noSeqScan(plan);
    expect(indexesUsed(plan)).toEqual(['jobs_tags_idx']);
  });

  it('a page deep in keyset order is an index range scan that reads only the rows of its page', async () => {
    // Page 500 of 50 from the newest: its cursor is 25,000 jobs down.
    const plan = await listPlan({}, '35000', true);
    const [scan] = planNodes(plan).filter((n) => n['Relation Name'] === 'jobs');
    expect(scan).toMatchObject({ 'Node Type': 'Index Scan', 'Index Name': 'jobs_pkey', 'Actual Rows': 51 });
    expect(scan!['Index Cond']).toContain('id <=');
    const failed = await listPlan({ states: ['failed'] }, '35000');
    noSeqScan(failed);
    expect(indexesUsed(failed)).toEqual(['jobs_admin_state_idx']);
  });

  it('a retry batch over failed jobs reads them from jobs_admin_state_idx', async () => {
    const compiled = compileFilter({ states: ['failed'] });
    const plan = await explain(adminBatchSql.retryBatch(compiled).text, [FIRST_CURSOR, 2000, ...compiled.values]);
    noSeqScan(plan);
    expect(indexesUsed(plan)).toContain('jobs_admin_state_idx');
  });
});
