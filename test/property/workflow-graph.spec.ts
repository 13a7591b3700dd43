import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { adminSql, jobsSql, workerSql } from '../../lib/sql/index.js';
import { insertGraph, type DependencyPolicy } from '../../lib/sql/workflow.sql.js';
import { createPropertyDb, type PropertyDb } from './property-db.js';

type Ending = 'complete' | 'fail' | 'cancel' | 'delete';
type State = 'available' | 'waiting' | 'completed' | 'failed' | 'cancelled' | 'deleted';
const ENDED: readonly State[] = ['completed', 'failed', 'cancelled', 'deleted'];

/** A random DAG: job i depends on a subset of the jobs before it, each job with its policy. */
const graphArb = fc.integer({ min: 1, max: 7 }).chain((n) =>
  fc.tuple(
    fc.tuple(
      ...Array.from({ length: n }, (_, i) =>
        fc.record({
          deps: fc.subarray(Array.from({ length: i }, (_, k) => k)),
          policy: fc.constantFrom<DependencyPolicy>('cancel', 'fail', 'ignore'),
        }),
      ),
    ),
    fc.array(fc.record({ pick: fc.nat(), ending: fc.constantFrom<Ending>('complete', 'fail', 'cancel', 'delete') }), {
      maxLength: 12,
    }),
  ),
);
type Graph = Array<{ deps: number[]; policy: DependencyPolicy }>;

/** What the policies say should happen: the same endings applied to an in-memory graph. */
class Model {
  readonly state: State[];
  private readonly waitingOn: number[];
  private readonly resolved = new Set<string>();

  constructor(private readonly graph: Graph) {
    this.state = graph.map((j) => (j.deps.length > 0 ? 'waiting' : 'available'));
    this.waitingOn = graph.map((j) => j.deps.length);
  }

  end(i: number, ending: State): void {
    this.state[i] = ending;
    this.graph.forEach((job, d) => {
      if (!job.deps.includes(i) || this.resolved.has(`${d}:${i}`)) return;
      this.resolved.add(`${d}:${i}`);
      if (this.state[d] !== 'waiting') return;
      if (ending === 'completed' || job.policy === 'ignore') {
        if (--this.waitingOn[d]! === 0) this.state[d] = 'available';
      } else this.end(d, job.policy === 'fail' ? 'failed' : 'cancelled');
    });
  }
}

/**
 * Random small graphs with random endings (complete, fail for good, cancel, delete), against the real
 * statements on a real database, compared with the policies applied to the graph in memory: every job
 * ends as they say, a job that is still waiting always has a dependency that can still finish, and
 * once every job that can run has run, nothing is left waiting.
 */
describe('workflow graphs (property-based, real SQL)', () => {
  let db: PropertyDb;

  beforeAll(async () => {
    db = await createPropertyDb();
  });
  afterAll(async () => {
    await db?.close();
  });

  const states = async (ids: string[]): Promise<State[]> => {
    const rows = await db.sql<{ id: string; state: State }>(
      'SELECT id::text, state FROM awa.all_jobs WHERE id = ANY($1::bigint[])',
      [ids],
    );
    const byId = new Map(rows.map((r) => [r.id, r.state]));
    return ids.map((id) => byId.get(id) ?? 'deleted');
  };

  /** Runs job `id` to its end as a worker would: claim (lease), then complete or fail for good. */
  const run = async (id: string, ending: 'complete' | 'fail') => {
    const [row] = await db.sql<{ run_lease: string }>(
      `UPDATE awa.jobs SET state = 'running', attempt = attempt + 1, run_lease = run_lease + 1
        WHERE id = $1 RETURNING run_lease::text`,
      [id],
    );
    await db.sql(
      `INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, claimed_at)
       VALUES ($1, $2, 'i', now(), now())`,
      [id, row!.run_lease],
    );
    if (ending === 'complete') await db.run(workerSql.completeJobs, [[id], [row!.run_lease]]);
    else await db.run(workerSql.failJobs, [[id], [row!.run_lease], ['boom'], [1], [1]]);
  };

  /** No waiting job is stuck: each waits on as many unresolved edges as it counts, from unfinished jobs. */
  const checkWaiting = async () => {
    const stuck = await db.sql(
      `SELECT j.id, j.waiting_on,
              (SELECT count(*) FROM awa.job_dependencies e WHERE e.dependent_id = j.id AND e.state IS NULL) AS open,
              (SELECT count(*) FROM awa.job_dependencies e JOIN awa.jobs d ON d.id = e.dependency_id
                WHERE e.dependent_id = j.id AND d.state NOT IN ('completed', 'failed', 'cancelled')) AS live
         FROM awa.jobs j WHERE j.state = 'waiting'`,
    );
    for (const row of stuck) {
      expect(Number(row.open)).toBe(row.waiting_on);
      expect(Number(row.live)).toBeGreaterThan(0);
    }
  };

  it('every job ends as the policies say, and no job is left waiting', async () => {
    let ran = 0;
    await fc.assert(
      fc.asyncProperty(graphArb, async ([graph, steps]) => {
        await db.reset();
        await db.sql('TRUNCATE awa.job_dependencies');
        const jobs = graph.map((j, i) => ({
          kind: `k${i}`,
          queue: 'default',
          args: {},
          priority: 0,
          max_attempts: 1,
          run_at: null,
          waiting_on: j.deps.length,
        }));
        const edges = graph.flatMap((j, i) =>
          j.deps.map((d) => ({ dependent: i, dependency: d, ref: `k${d}`, policy: j.policy })),
        );
        const rows = await db.run(insertGraph, [JSON.stringify(jobs), randomUUID(), JSON.stringify(edges)]);
        const ids = rows.map((r) => r.id);
        const model = new Model(graph);

        const apply = async (i: number, ending: Ending) => {
          if (ending === 'complete' || ending === 'fail') await run(ids[i]!, ending);
          else if (ending === 'cancel') await db.run(jobsSql.cancelWaitingJob, [ids[i]!, 'cancelled']);
          else await db.run(adminSql.deleteJob, [ids[i]!]);
          const end = { complete: 'completed', fail: 'failed', cancel: 'cancelled', delete: 'deleted' } as const;
          model.end(i, end[ending]);
          expect(await states(ids)).toEqual(model.state);
          await checkWaiting();
        };
        for (const { pick, ending } of steps) {
          // Complete and fail run an available job; cancel and delete take any job not ended yet.
          const runnable = ending === 'complete' || ending === 'fail';
          const candidates = model.state
            .map((s, i) => [s, i] as const)
            .filter(([s]) => (runnable ? s === 'available' : !ENDED.includes(s)))
            .map(([, i]) => i);
          if (candidates.length > 0) await apply(candidates[pick % candidates.length]!, ending);
        }
        // Then every job that can run, runs.
        for (let i = model.state.indexOf('available'); i >= 0; i = model.state.indexOf('available')) {
          await apply(i, 'complete');
          ran++;
        }
        expect(model.state.filter((s) => s === 'waiting')).toEqual([]);
        expect(await db.sql(`SELECT id FROM awa.jobs WHERE state = 'waiting'`)).toEqual([]);
        // A completed job ran after all its dependencies completed, unless it ignores failures.
        graph.forEach((job, i) => {
          if (model.state[i] === 'completed' && job.policy !== 'ignore')
            expect(job.deps.every((d) => model.state[d] === 'completed')).toBe(true);
        });
      }),
      { numRuns: 40 },
    );
    expect(ran).toBeGreaterThan(0);
  }, 180_000);
});
