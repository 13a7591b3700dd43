import type pg from 'pg';
import { explainCompletion, examinedRows, PLAN_CASES } from '../support/completion-plan.js';
import { seedRunning } from '../support/job-factory.js';
import { useSqlFixture } from './sql-fixture.js';

const WAITING = 100_000;

/**
 * Resolving dependents (resolveDependents, in every finishing statement) reads the edges of the jobs
 * the statement ends, never every waiting job: a workflow of thousands of waiting steps costs the
 * completions of other jobs nothing, whatever the statistics say when the statement is planned.
 */
describe('resolving dependents beside thousands of waiting jobs', () => {
  const f = useSqlFixture({ reset: false });
  let client: pg.Client;
  let workflowJob: { id: string; runLease: string };

  beforeAll(async () => {
    client = await f.client();
    // A chain of WAITING steps behind one running job: each waits for the one before it.
    const [{ id: first }] = await f.sql(
      `INSERT INTO awa.jobs (kind, queue, state, attempt, run_lease, workflow_id, waiting_on)
       VALUES ('step', 'default', 'running', 1, 1, '00000000-0000-4000-8000-000000000001', 0) RETURNING id::text`,
    );
    await f.sql(
      `INSERT INTO awa.active_leases (job_id, run_lease, instance_id, heartbeat_at, claimed_at)
                 VALUES ($1, 1, 'i', now(), now())`,
      [first],
    );
    await f.sql(
      `WITH steps AS (
         INSERT INTO awa.jobs (kind, queue, state, workflow_id, waiting_on)
         SELECT 'step', 'default', 'waiting', '00000000-0000-4000-8000-000000000001', 1 FROM generate_series(1, $1)
         RETURNING id
       )
       INSERT INTO awa.job_dependencies (dependent_id, dependency_id, workflow_id, ref, policy)
       SELECT id, CASE WHEN id = min(id) OVER () THEN $2::bigint ELSE id - 1 END,
              '00000000-0000-4000-8000-000000000001', 'prev', 'cancel'
         FROM steps`,
      [WAITING, first],
    );
    workflowJob = { id: first, runLease: '1' };
  });

  const completion = (job: { id: string; runLease: string }, mode: 'custom' | 'generic', analyzed: boolean) =>
    explainCompletion(client, [job], mode, analyzed);

  it.each(PLAN_CASES)(
    'a plain job’s completion reads no waiting job (%s plan, statistics taken: %s)',
    async (mode, analyzed) => {
      const plain = await seedRunning(f.sql);
      // Its own row, its lease: a handful of rows, not the WAITING steps.
      expect(examinedRows(await completion(plain, mode, analyzed))).toBeLessThan(20);
    },
  );

  // With statistics (as autovacuum keeps them: awa.job_dependencies is analyzed at 5% changed, see
  // AwaHotTableStorage) and without (a server with autovacuum off, or a graph inserted since the last
  // analyze): the walk of doomed dependents runs per ended job from its edges' index (a lateral
  // subquery), never as a join of every edge with every waiting job, even when it finds nothing.
  it.each(PLAN_CASES)(
    'a step’s completion reads its own dependent’s edge and row (%s plan, statistics taken: %s)',
    async (mode, analyzed) => {
      expect(examinedRows(await completion(workflowJob, mode, analyzed))).toBeLessThan(40);
    },
  );
});
