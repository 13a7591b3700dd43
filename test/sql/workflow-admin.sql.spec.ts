import { randomUUID } from 'node:crypto';
import { FIRST_CURSOR } from '../../lib/sql/admin.sql.js';
import * as workflowAdminSql from '../../lib/sql/workflow-admin.sql.js';
import { insertGraph } from '../../lib/sql/workflow.sql.js';
import { JOB_TABLE_COLUMNS } from '../../lib/sql/job-row.sql.js';
import { graphJob } from '../support/job-factory.js';
import { statementsOf, useSqlFixture } from './sql-fixture.js';

/** Workflows as QueueAdmin reads and retries them. */
describe('workflow-admin.sql', () => {
  const f = useSqlFixture();

  /** A chain a <- b <- c (c waits for b, b for a); returns the workflow id and the job ids. */
  const chain = async () => {
    const id = randomUUID();
    const rows = await f.run(insertGraph, [
      JSON.stringify([graphJob('a', 0), graphJob('b', 1), graphJob('c', 1)]),
      id,
      JSON.stringify([
        { dependent: 1, dependency: 0, ref: 'a', policy: 'cancel' },
        { dependent: 2, dependency: 1, ref: 'b', policy: 'cancel' },
      ]),
    ]);
    return { id, ids: rows.map((r) => r.id) };
  };
  /** Ends jobs `ids` in `state`, as the finishing statements leave them (in awa.job_history). */
  const archive = (ids: string[], state: string) =>
    f.sql(
      `WITH moved AS (DELETE FROM awa.jobs WHERE id = ANY($1::bigint[]) RETURNING *)
       INSERT INTO awa.job_history (${JOB_TABLE_COLUMNS.join(', ')}, segment)
       SELECT ${JOB_TABLE_COLUMNS.map((c) => (c === 'state' ? '$2::text' : `m.${c}`)).join(', ')},
              CASE WHEN $2 = 'completed' THEN 0 ELSE 8 END FROM moved m`,
      [ids, state],
    );

  it('sums a workflow up, lists its jobs and edges, and lists workflows by state', async () => {
    const running = await chain();
    const failed = await chain();
    await archive(failed.ids, 'failed');
    expect(await f.run(workflowAdminSql.workflowSummary, [running.id])).toEqual([
      expect.objectContaining({ workflow_id: running.id, state: 'running', jobs: 3, finished_at: null }),
    ]);
    expect((await f.run(workflowAdminSql.workflowJobs, [running.id, 10])).map((j) => j.state)).toEqual([
      'available',
      'waiting',
      'waiting',
    ]);
    expect((await f.run(workflowAdminSql.workflowEdges, [running.id, 10])).map((e) => e.ref)).toEqual(['a', 'b']);
    expect(
      (await f.run(workflowAdminSql.listWorkflows, ['failed', FIRST_CURSOR, 10])).map((w) => w.workflow_id),
    ).toEqual([failed.id]);
    expect((await f.run(workflowAdminSql.listWorkflows, [null, FIRST_CURSOR, 10])).map((w) => w.workflow_id)).toEqual([
      failed.id,
      running.id,
    ]);
  });

  it('retrying re-arms the failed and cancelled jobs: each waits for the retried ones it depends on', async () => {
    const { id, ids } = await chain();
    await archive([ids[0]!], 'failed');
    await archive([ids[1]!, ids[2]!], 'cancelled');
    expect(await f.run(workflowAdminSql.retryWorkflow, [id])).toEqual([{ retried: 3 }]);
    const rows = await f.sql('SELECT state, waiting_on, attempt FROM awa.jobs ORDER BY id');
    expect(rows).toEqual([
      { state: 'available', waiting_on: 0, attempt: 0 },
      { state: 'waiting', waiting_on: 1, attempt: 0 },
      { state: 'waiting', waiting_on: 1, attempt: 0 },
    ]);
    expect(await f.sql('SELECT count(*)::int AS n FROM awa.job_history')).toEqual([{ n: 0 }]);
  });

  it("lists a job's dependencies and dependents with their states now", async () => {
    const { ids } = await chain();
    const links = await f.run(workflowAdminSql.jobLinks, [ids[1]!, 10]);
    expect(links.map((l) => [l.side, l.id, l.ref, l.state])).toEqual([
      ['dependency', ids[0], 'a', 'available'],
      ['dependent', ids[2], 'b', 'waiting'],
    ]);
  });

  it('runs every statement of its module', () => {
    for (const s of statementsOf(workflowAdminSql)) expect(f.executed).toContain(s.name);
  });
});
