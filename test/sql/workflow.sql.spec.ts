import { randomUUID } from 'node:crypto';
import { adminSql, jobsSql, maintenanceSql, workerSql } from '../../lib/sql/index.js';
import * as workflowSql from '../../lib/sql/workflow.sql.js';
import { explainedPlan, readsOf } from '../support/query-plan.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';

/** A job of insertGraph's payload. */
const job = (kind: string, waitingOn = 0) =>
  ({ kind, queue: 'default', args: {}, priority: 0, max_attempts: 1, run_at: null, waiting_on: waitingOn }) as const;
type Policy = workflowSql.DependencyPolicy;

/** Workflow edges resolve inside the statements that end jobs (completion, failure, cancel, delete). */
describe('workflow.sql', () => {
  const f = useSqlFixture();

  /** Inserts jobs `kinds` with `edges` [dependent, dependency, policy] (positions); returns ids. */
  const graph = async (kinds: string[], edges: Array<[number, number, Policy?]>): Promise<string[]> => {
    const counts = kinds.map((_, i) => edges.filter(([d]) => d === i).length);
    const rows = await f.run(workflowSql.insertGraph, [
      JSON.stringify(kinds.map((k, i) => job(k, counts[i]))),
      randomUUID(),
      JSON.stringify(
        edges.map(([d, p, policy]) => ({ dependent: d, dependency: p, ref: kinds[p], policy: policy ?? 'cancel' })),
      ),
    ]);
    return rows.map((r) => r.id);
  };
  const stateOf = async (id: string) =>
    (await f.sql('SELECT state FROM awa.all_jobs WHERE id = $1', [id]))[0]?.state as string | undefined;
  const states = (ids: string[]) => Promise.all(ids.map(stateOf));
  /** Claims job `id` as a worker would (running, attempt 1, a lease). */
  const claim = async (id: string) => {
    const [row] = await f.sql(
      `UPDATE awa.jobs SET state = 'running', attempt = attempt + 1, run_lease = run_lease + 1 WHERE id = $1
       RETURNING run_lease::text`,
      [id],
    );
    await f.sql(
      `INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, claimed_at)
       VALUES ($1, $2, 'i', now(), now())`,
      [id, row.run_lease],
    );
    return row.run_lease as string;
  };
  const complete = async (...ids: string[]) => {
    const leases = await Promise.all(ids.map(claim));
    return f.run(workerSql.completeJobs, [ids, leases]);
  };
  const failFinally = async (id: string) =>
    f.run(workerSql.failJobs, [[id], [await claim(id)], ['boom'], [1000], [1000]]);

  it('a graph is inserted with its waiting jobs and edges, ids in input order', async () => {
    const [a, b, c] = await graph(
      ['a', 'b', 'c'],
      [
        [2, 0],
        [2, 1],
      ],
    );
    expect(await states([a!, b!, c!])).toEqual(['available', 'available', 'waiting']);
    const [row] = await f.sql('SELECT waiting_on, workflow_id IS NOT NULL AS wf FROM awa.jobs WHERE id = $1', [c]);
    expect(row).toEqual({ waiting_on: 2, wf: true });
    const edges = await f.sql('SELECT dependency_id::text, ref FROM awa.job_dependencies ORDER BY ref');
    expect(edges).toEqual([
      { dependency_id: a, ref: 'a' },
      { dependency_id: b, ref: 'b' },
    ]);
  });

  it('the last dependency to complete makes its dependent available, in the same statement', async () => {
    const [a, b, c] = await graph(
      ['a', 'b', 'c'],
      [
        [2, 0],
        [2, 1],
      ],
    );
    await complete(a!);
    expect(await stateOf(c!)).toBe('waiting');
    await complete(b!);
    expect(await stateOf(c!)).toBe('available');
  });

  it('a batch completing every dependency of a fan-in unblocks the dependent once, by the count of them', async () => {
    const kinds = ['parent', ...Array.from({ length: 50 }, (_, i) => `child-${i}`)];
    const ids = await graph(
      kinds,
      kinds.slice(1).map((_, i) => [0, i + 1] as [number, number]),
    );
    await complete(...ids.slice(1));
    const [row] = await f.sql('SELECT state, waiting_on FROM awa.jobs WHERE id = $1', [ids[0]]);
    expect(row).toEqual({ state: 'available', waiting_on: 0 });
  });

  it('a completion whose lease was rescued unblocks nothing', async () => {
    const [a, b] = await graph(['a', 'b'], [[1, 0]]);
    const lease = await claim(a!);
    await f.sql('DELETE FROM awa.active_leases WHERE job_id = $1', [a]);
    expect(await f.run(workerSql.completeJobs, [[a!], [lease]])).toEqual([{ id: a, run_lease: lease }]);
    expect(await stateOf(b!)).toBe('waiting');
    expect(await f.sql('SELECT count(*)::int AS n FROM awa.job_dependencies WHERE state IS NOT NULL')).toEqual([
      { n: 0 },
    ]);
  });

  it('a final failure cancels its dependents transitively under cancel, fails them under fail', async () => {
    const [a, b, c, d] = await graph(
      ['a', 'b', 'c', 'd'],
      [
        [1, 0, 'cancel'],
        [2, 1, 'fail'],
        [3, 0, 'fail'],
      ],
    );
    await failFinally(a!);
    expect(await states([a!, b!, c!, d!])).toEqual(['failed', 'cancelled', 'failed', 'failed']);
  });

  it('under ignore a failed dependency counts as ended: the dependent runs and its edge says failed', async () => {
    const [a, b, c] = await graph(
      ['a', 'b', 'c'],
      [
        [2, 0, 'ignore'],
        [2, 1, 'cancel'],
      ],
    );
    await failFinally(a!);
    expect(await stateOf(c!)).toBe('waiting');
    await complete(b!);
    expect(await stateOf(c!)).toBe('available');
    const results = await f.run(workflowSql.dependencyResults, [c!, '', 10]);
    expect(results.map((r) => [r.ref, r.state])).toEqual([
      ['a', 'failed'],
      ['b', 'completed'],
    ]);
  });

  it('a retryable failure resolves nothing', async () => {
    const [a, b] = await graph(['a', 'b'], [[1, 0]]);
    await f.sql('UPDATE awa.jobs SET max_attempts = 3 WHERE id = $1', [a]);
    await failFinally(a!);
    expect(await states([a!, b!])).toEqual(['retryable', 'waiting']);
  });

  it('cancelling a waiting job cancels its dependents; deleting one does too', async () => {
    const [a, b, c] = await graph(
      ['a', 'b', 'c'],
      [
        [1, 0],
        [2, 1],
      ],
    );
    expect(await f.run(jobsSql.cancelWaitingJob, [b!, 'stop'])).toHaveLength(1);
    expect(await states([a!, b!, c!])).toEqual(['available', 'cancelled', 'cancelled']);
    const [x, y] = await graph(['x', 'y'], [[1, 0, 'ignore']]);
    expect(await f.run(adminSql.deleteJob, [x!])).toEqual([{ state: 'available', deleted: true }]);
    expect(await stateOf(y!)).toBe('available');
    expect(await f.run(workflowSql.dependencyResults, [y!, '', 10])).toEqual([
      { ref: 'x', id: x, state: 'deleted', output: null },
    ]);
  });

  it('a rescue into failure resolves dependents like a failure', async () => {
    const [a, b] = await graph(['a', 'b'], [[1, 0]]);
    await claim(a!);
    await f.sql(
      `UPDATE awa.active_leases SET heartbeat_at = now() - interval '1 hour', claimed_at = now() - interval '1 hour'`,
    );
    const rescued = await f.run(maintenanceSql.rescueStaleHeartbeats, [[], [], [], 1000, 1000, 100, 1000, 'stale']);
    expect(rescued.map((r) => r.state)).toEqual(['failed']);
    expect(await stateOf(b!)).toBe('cancelled');
  });

  it('a final hard deadline resolves dependents like a failure (fail policy: failed)', async () => {
    const [a, b] = await graph(['a', 'b'], [[1, 0, 'fail']]);
    await claim(a!);
    await f.sql(`UPDATE awa.active_leases SET deadline_at = now() - interval '1 second'`);
    const rescued = await f.run(maintenanceSql.rescueExpiredDeadlines, [[], [], [], 1000, 1000, 100, 'deadline']);
    expect(rescued.map((r) => r.state)).toEqual(['failed']);
    expect(await stateOf(b!)).toBe('failed');
  });

  it('edges of dependents gone from both tables are pruned; a waiting dependent keeps its own', async () => {
    const [a, b] = await graph(['a', 'b'], [[1, 0]]);
    const [x, y] = await graph(['x', 'y'], [[1, 0]]);
    await complete(a!);
    await complete(x!);
    await f.sql('DELETE FROM awa.jobs WHERE id = $1', [b]);
    expect(await f.run(workflowSql.pruneEdges, [10])).toEqual([{ pruned: 1 }]);
    expect(await f.sql('SELECT dependent_id::text FROM awa.job_dependencies')).toEqual([{ dependent_id: y }]);
  });

  it('a dependency rotated out of the history still gives its waiting dependent its ending and output', async () => {
    const [a, b, c] = await graph(
      ['a', 'b', 'c'],
      [
        [2, 0],
        [2, 1],
      ],
    );
    await f.run(workerSql.completeJobsWithOutput, [[a!], [await claim(a!)], ['{"pages": 3}'], [null]]);
    await f.sql('TRUNCATE awa.job_history');
    expect(await stateOf(c!)).toBe('waiting');
    expect(await f.run(workflowSql.dependencyResults, [c!, '', 10])).toEqual([
      { ref: 'a', id: a, state: 'completed', output: { pages: 3 } },
      { ref: 'b', id: b, state: 'available', output: null },
    ]);
  });

  it('dependency results page by ref', async () => {
    const ids = await graph(
      ['p', 'a', 'b', 'c'],
      [
        [0, 1],
        [0, 2],
        [0, 3],
      ],
    );
    const first = await f.run(workflowSql.dependencyResults, [ids[0]!, '', 2]);
    expect(first.map((r) => r.ref)).toEqual(['a', 'b']);
    const next = await f.run(workflowSql.dependencyResults, [ids[0]!, 'b', 2]);
    expect(next.map((r) => [r.ref, r.state])).toEqual([['c', 'available']]);
  });

  it('a completion reads and writes the edges by index (the plan, with sequential scans off)', async () => {
    const [a] = await graph(['a', 'b'], [[1, 0]]);
    const lease = await claim(a!);
    const client = await f.client();
    await client.query('BEGIN');
    try {
      await client.query('SET LOCAL enable_seqscan = off');
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${workerSql.completeJobs.text}`, [[a], [lease]]);
      const plan = explainedPlan(rows);
      const edgeScans = readsOf(plan, 'job_dependencies').map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''}`);
      expect(edgeScans.length).toBeGreaterThan(0);
      expect(edgeScans.filter((scan) => !scan.startsWith('Index') && !scan.startsWith('Bitmap'))).toEqual([]);
    } finally {
      await client.query('ROLLBACK');
    }
  });

  it('steps added by a job: its lock is fenced, and its waiting dependents wait for the steps too', async () => {
    const [a, b] = await graph(['a', 'b'], [[1, 0, 'fail']]);
    const lease = await claim(a!);
    expect(await f.run(workflowSql.lockAttempt, [a!, String(Number(lease) + 1)])).toEqual([]);
    const [held] = await f.run(workflowSql.lockAttempt, [a!, lease]);
    expect(held).toMatchObject({ cancel_requested: false, workflow_id: expect.any(String) });
    const [step1, step2] = await graph(['s1', 's2'], []);
    await f.run(workflowSql.waitForSteps, [a!, [step1!, step2!], ['s1', 's2'], held!.workflow_id!]);
    const edges = await f.sql(
      'SELECT dependency_id::text, ref, policy FROM awa.job_dependencies WHERE dependent_id = $1 ORDER BY ref',
      [b],
    );
    expect(edges).toEqual([
      { dependency_id: a, ref: 'a', policy: 'fail' },
      { dependency_id: step1, ref: 's1', policy: 'fail' },
      { dependency_id: step2, ref: 's2', policy: 'fail' },
    ]);
    await f.run(workerSql.completeJobs, [[a!], [lease]]);
    const [row] = await f.sql('SELECT state, waiting_on FROM awa.jobs WHERE id = $1', [b]);
    expect(row).toEqual({ state: 'waiting', waiting_on: 2 });
  });

  it('runs every statement of its module', () => {
    for (const s of statementsOf(workflowSql)) expect(f.executed).toContain(s.name);
  });
});
